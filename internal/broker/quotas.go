package broker

// Client quotas, enforced as Kafka enforces them (KafkaApis,
// RequestHandlerHelper): after a request is handled, what it cost is
// recorded against the sensors of its principal's user name and client
// id (internal/quota: Kafka's precedence and arithmetic), the largest
// throttle goes into the response's throttle_time_ms and the connection
// is muted for that long (KIP-219, internal/protocol Request.Throttle).
//
//   - producer_byte_rate: a Produce's request size (acks=0 too, whose
//     connection is muted though it gets no response).
//   - consumer_byte_rate: a Fetch's record bytes. A Fetch over its quota is
//     answered empty and its bytes not counted (Kafka's throttled fetch);
//     max_bytes is lowered to what one quota window allows
//     (getMaxValueInQuotaWindow). Deviation: Kafka counts the whole
//     response's size, minibroker its record sets (the rest is a few
//     bytes a partition).
//   - request_percentage: the time the handler ran, as a percentage of one
//     thread over the window, less a Fetch's long-poll wait (Kafka counts
//     request-handler thread time, in which a waiting Fetch is not).
//     Deviation: minibroker counts wall time in the handler, Kafka thread
//     time (it also counts network-thread time). Exempt as in Kafka:
//     SaslHandshake, SaslAuthenticate, WriteTxnMarkers, a replica's
//     Fetch, and Produce acks=0 (whose bytes still count).
//   - controller_mutation_rate: CreateTopics (v6+), CreatePartitions (v3+)
//     and DeleteTopics (v5+) refuse a topic with THROTTLING_QUOTA_EXCEEDED
//     once the token bucket is empty; older versions are accepted and
//     throttled (Kafka's strict and permissive quotas). Partitions
//     created or deleted are the permits. Deviation: Kafka takes the
//     permits once a topic has passed its other checks; minibroker takes
//     them before handling and gives back those of topics that fail.
//   - connection_creation_rate (ip entities): protocol.Config.ConnectionThrottle.

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/quota"
)

// quotaConfig is the sensors' sampling from Kafka's settings.
func quotaConfig(cfg config.Config) quota.Config {
	return quota.Config{
		Samples:           int(cfg.Int32("quota.window.num")),
		Window:            time.Duration(cfg.Int32("quota.window.size.seconds")) * time.Second,
		ControllerSamples: int(cfg.Int32("controller.quota.window.num")),
		ControllerWindow:  time.Duration(cfg.Int32("controller.quota.window.size.seconds")) * time.Second,
	}
}

// quotaUser is the user name quotas know a principal by: the name of
// "User:alice", ANONYMOUS for an unauthenticated client (Kafka's
// KafkaPrincipal.getName).
func quotaUser(req *protocol.Request) string {
	p := principal(req)
	if _, name, ok := strings.Cut(p, ":"); ok {
		return name
	}
	return p
}

// quotaExempt: requests Kafka never throttles for request time.
func quotaExempt(req *protocol.Request) bool {
	switch body := req.Body.(type) {
	case *kmsg.SASLHandshakeRequest, *kmsg.SASLAuthenticateRequest, *kmsg.WriteTxnMarkersRequest:
		return true
	case *kmsg.FetchRequest:
		return body.ReplicaID >= 0 || body.ReplicaState.ID >= 0
	case *kmsg.ProduceRequest:
		return body.Acks == 0
	}
	return false
}

// quotaState is what quotasBefore prepared for quotasAfter.
type quotaState struct {
	start     time.Time
	waited    *atomic.Int64 // a Fetch's long-poll wait, in nanoseconds
	mutations *quota.Mutations
	// throttled are the topics refused for the mutation quota, with the
	// permits taken for the others by name.
	throttled []string
	permits   map[string]float64
}

type fetchWaitKey struct{}

// noteFetchWait adds the time since start to the request's long-poll
// wait (not request time for request_percentage).
func noteFetchWait(ctx context.Context, start time.Time) {
	if w, ok := ctx.Value(fetchWaitKey{}).(*atomic.Int64); ok {
		w.Add(int64(time.Since(start)))
	}
}

// quotasBefore prepares a request for its quotas; ctx gains the Fetch
// wait clock.
func (b *Broker) quotasBefore(ctx context.Context, req *protocol.Request) (context.Context, *quotaState) {
	if b.quotas == nil || b.knobs.skipQuotaEnforcement || !b.quotas.AnyEnabled() {
		return ctx, nil
	}
	st := &quotaState{start: time.Now()}
	user := quotaUser(req)
	switch body := req.Body.(type) {
	case *kmsg.FetchRequest:
		if b.quotas.Enabled(quota.Request) {
			st.waited = new(atomic.Int64)
			ctx = context.WithValue(ctx, fetchWaitKey{}, st.waited)
		}
		if w := b.quotas.MaxInWindow(quota.Fetch, user, req.ClientID); !math.IsInf(w, 1) && body.ReplicaID < 0 && body.ReplicaState.ID < 0 {
			if w < float64(body.MaxBytes) || body.MaxBytes <= 0 {
				body.MaxBytes = int32(max(min(w, math.MaxInt32), 1))
			}
			body.MinBytes = min(body.MinBytes, body.MaxBytes)
		}
	case *kmsg.CreateTopicsRequest:
		st.mutations = b.quotas.Mutations(user, req.ClientID, req.Version >= 6)
		body.Topics = slices.DeleteFunc(body.Topics, func(t kmsg.CreateTopicsRequestTopic) bool {
			n := float64(t.NumPartitions)
			if t.NumPartitions < 0 {
				n = float64(b.cfg.Int32("num.partitions"))
				if len(t.ReplicaAssignment) > 0 {
					n = float64(len(t.ReplicaAssignment))
				}
			}
			return st.take(t.Topic, n)
		})
	case *kmsg.CreatePartitionsRequest:
		st.mutations = b.quotas.Mutations(user, req.ClientID, req.Version >= 3)
		body.Topics = slices.DeleteFunc(body.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool {
			ps := b.partitionsOf(t.Topic)
			if ps == nil || int(t.Count) <= len(ps) {
				return false // refused for another reason
			}
			return st.take(t.Topic, float64(int(t.Count)-len(ps)))
		})
	case *kmsg.DeleteTopicsRequest:
		st.mutations = b.quotas.Mutations(user, req.ClientID, req.Version >= 5)
		body.TopicNames = slices.DeleteFunc(body.TopicNames, func(n string) bool {
			ps := b.partitionsOf(n)
			return ps != nil && st.take(n, float64(len(ps)))
		})
		body.Topics = slices.DeleteFunc(body.Topics, func(t kmsg.DeleteTopicsRequestTopic) bool {
			name := b.topicNameOf(t.Topic, t.TopicID)
			ps := b.partitionsOf(name)
			return ps != nil && st.take(name, float64(len(ps)))
		})
	}
	return ctx, st
}

// take takes n permits for topic and reports whether it is refused.
func (st *quotaState) take(topic string, n float64) bool {
	if !st.mutations.Record(n) {
		st.throttled = append(st.throttled, topic)
		return true
	}
	if st.permits == nil {
		st.permits = map[string]float64{}
	}
	st.permits[topic] += n
	return false
}

// topicNameOf is a DeleteTopics v6 entry's topic name (by name or ID).
func (b *Broker) topicNameOf(name *string, id [16]byte) string {
	if name != nil && *name != "" {
		return *name
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if t, ok := b.topicsByID[id]; ok {
		return t.Name
	}
	return ""
}

const throttledMessage = "The throttling quota has been exceeded."

// quotasAfter records what the request cost, sets its response's
// throttle and mutes the connection.
func (b *Broker) quotasAfter(req *protocol.Request, resp kmsg.Response, st *quotaState) {
	if st == nil {
		return
	}
	user, client := quotaUser(req), req.ClientID
	var (
		throttle time.Duration
		typ      quota.Type
	)
	consider := func(t quota.Type, d time.Duration) {
		if d > throttle {
			throttle, typ = d, t
		}
	}
	if !quotaExempt(req) {
		elapsed := time.Since(st.start)
		if st.waited != nil {
			elapsed -= time.Duration(st.waited.Load())
		}
		consider(quota.Request, b.quotas.Record(quota.Request, user, client, float64(max(elapsed, 0).Nanoseconds())*100/1e9))
	}
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		consider(quota.Produce, b.quotas.Record(quota.Produce, user, client, float64(req.Size)))
	case nil:
		if _, ok := req.Body.(*kmsg.ProduceRequest); ok { // acks=0
			consider(quota.Produce, b.quotas.Record(quota.Produce, user, client, float64(req.Size)))
		}
	case *kmsg.FetchResponse:
		if fr := req.Body.(*kmsg.FetchRequest); fr.ReplicaID >= 0 || fr.ReplicaState.ID >= 0 {
			break
		}
		n := float64(fetchRecordBytes(r) + req.FileRecordBytes())
		d := b.quotas.Record(quota.Fetch, user, client, n)
		if d > 0 || throttle > 0 {
			// Throttled: answered empty, its bytes not counted. A full
			// fetch's new session is dropped and session id 0 answered,
			// as Kafka's FullFetchContext.getThrottledResponse (which
			// creates none). Deviation: a throttled incremental fetch has
			// already updated its session's cached high watermarks,
			// which Kafka's getThrottledResponse leaves alone.
			b.quotas.Unrecord(quota.Fetch, user, client, n)
			r.Topics = nil
			req.Release()
			if fr := req.Body.(*kmsg.FetchRequest); fr.SessionEpoch <= 0 && r.SessionID != 0 && b.fetchSessions != nil {
				b.fetchSessions.remove(r.SessionID)
				r.SessionID = 0
			}
		}
		consider(quota.Fetch, d)
	case *kmsg.CreateTopicsResponse:
		for i := range r.Topics {
			if r.Topics[i].ErrorCode != 0 {
				st.mutations.Refund(st.permits[r.Topics[i].Topic])
			}
		}
		for _, name := range st.throttled {
			t := kmsg.NewCreateTopicsResponseTopic()
			t.Topic, t.ErrorCode, t.ErrorMessage = name, kerr.ThrottlingQuotaExceeded.Code, kmsg.StringPtr(throttledMessage)
			t.NumPartitions, t.ReplicationFactor = -1, -1
			r.Topics = append(r.Topics, t)
		}
		consider(quota.ControllerMutation, st.mutations.ThrottleTime())
	case *kmsg.CreatePartitionsResponse:
		for i := range r.Topics {
			if r.Topics[i].ErrorCode != 0 {
				st.mutations.Refund(st.permits[r.Topics[i].Topic])
			}
		}
		for _, name := range st.throttled {
			t := kmsg.NewCreatePartitionsResponseTopic()
			t.Topic, t.ErrorCode, t.ErrorMessage = name, kerr.ThrottlingQuotaExceeded.Code, kmsg.StringPtr(throttledMessage)
			r.Topics = append(r.Topics, t)
		}
		consider(quota.ControllerMutation, st.mutations.ThrottleTime())
	case *kmsg.DeleteTopicsResponse:
		for i := range r.Topics {
			if r.Topics[i].ErrorCode != 0 && r.Topics[i].Topic != nil {
				st.mutations.Refund(st.permits[*r.Topics[i].Topic])
			}
		}
		for _, name := range st.throttled {
			t := kmsg.NewDeleteTopicsResponseTopic()
			t.Topic, t.ErrorCode, t.ErrorMessage = kmsg.StringPtr(name), kerr.ThrottlingQuotaExceeded.Code, kmsg.StringPtr(throttledMessage)
			if req.Version >= 6 {
				b.mu.RLock()
				if tp, ok := b.topics[name]; ok {
					t.TopicID = tp.ID
				}
				b.mu.RUnlock()
			}
			r.Topics = append(r.Topics, t)
		}
		consider(quota.ControllerMutation, st.mutations.ThrottleTime())
	}
	if throttle <= 0 {
		return
	}
	b.quotas.Throttled(typ, user, client, throttle)
	if t, ok := resp.(kmsg.SetThrottleResponse); ok {
		ms := min(throttle.Milliseconds(), math.MaxInt32)
		if old, _ := resp.(kmsg.ThrottleResponse).Throttle(); int64(old) < ms {
			t.SetThrottle(int32(ms))
		}
	}
	req.Throttle(throttle)
}

// fetchRecordBytes is the record bytes a Fetch response holds in memory.
func fetchRecordBytes(r *kmsg.FetchResponse) int {
	n := 0
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			n += len(r.Topics[i].Partitions[j].RecordBatches)
		}
	}
	return n
}
