package broker

// Fault injection (docs/FAULTS.md): with faults.enable, requests pass through
// the fault registry before their handler. With no fault set the cost is
// one atomic load (Registry.Active); with faults disabled the registry is
// nil. Nothing on the Kafka protocol reaches the registry: faults are set
// from the HTTP admin API (faults_http.go), the CLI through it, or
// minibrokertest in-process.
//
// What a fault that fires does to a request:
//   - latency: the request waits (sum of the latencies that fired), then
//     goes on; the connection's later requests wait behind it, as they
//     would behind a slow broker.
//   - drop: the connection is closed instead of answering; the request is
//     not served.
//   - error without a topic: the whole request is answered with the code
//     (every entry it names, or the response's own error), and not served.
//   - error with a topic (and partition), and storage: for Produce the
//     matching partitions are taken out of the request and answered with
//     the code (nothing appended), for Fetch answered with the code and
//     not read (a fetch session keeps them); the rest is served. For other APIs the request is served and the matching
//     entries' error code replaced in the answer: a client sees an error
//     for an action that was carried out, as after a lost answer.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/fault"
	"github.com/minibroker/minibroker/internal/protocol"
)

// Faults is the broker's fault registry, nil unless faults.enable.
func (b *Broker) Faults() *fault.Registry { return b.faults }

// openFaults sets up the registry when faults.enable is on: given (a
// test cluster keeps one across restarts) or new.
func (b *Broker) openFaults(given *fault.Registry) {
	if !b.cfg.Bool("faults.enable") {
		return
	}
	if given == nil {
		given = fault.NewRegistry(nil)
	}
	given.SetLogger(b.logger.Named("fault"))
	b.faults = given
	b.registry.MustRegister(given.Collector())
	b.faultRoutes()
	b.logger.Warn("fault injection enabled (faults.enable): faults can be set from the HTTP admin API by loopback clients")
}

// handleWithFaults serves a request while faults are set.
func (b *Broker) handleWithFaults(ctx context.Context, req *protocol.Request) kmsg.Response {
	fired := b.faults.Match(fault.Request{APIKey: req.Key, Names: func(topic string, partition int32) bool {
		return requestNames(req.Body, topic, partition, b.topicName) || b.fetchSessionNames(req.Body, topic, partition)
	}})
	if len(fired) == 0 {
		return b.handlers[req.Key].fn(ctx, req)
	}
	var latency time.Duration
	var whole *fault.Fired
	var partial []fault.Fired
	drop := false
	for i, f := range fired {
		switch {
		case f.Kind == fault.Latency:
			latency += f.Latency
		case f.Kind == fault.Drop:
			drop = true
		case f.Topic == "":
			if whole == nil {
				whole = &fired[i]
			}
		default:
			partial = append(partial, f)
		}
	}
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
	}
	switch {
	case drop:
		b.logger.Debug("fault: dropping connection", zap.Int16("api_key", req.Key), zap.Stringer("remote", req.Remote))
		req.CloseConnection()
		return nil
	case whole != nil:
		if p, ok := req.Body.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
			return nil
		}
		return errorResponse(req.Body, whole.ErrorCode)
	case len(partial) > 0:
		switch req.Key {
		case 0:
			return b.produceWithFaults(ctx, req, partial)
		case 1:
			return b.fetchWithFaults(ctx, req, partial)
		}
		resp := b.handlers[req.Key].fn(ctx, req)
		if resp != nil {
			for _, f := range partial {
				setErrors(resp, f.Topic, f.Partition, f.ErrorCode, b.topicName)
			}
		}
		return resp
	}
	return b.handlers[req.Key].fn(ctx, req)
}

// topicName resolves a topic id, "" when unknown.
func (b *Broker) topicName(id [16]byte) string {
	if t, ok := b.topicByID(id); ok {
		return t.Name
	}
	return ""
}

// faultCode is the code of the first fault naming the partition, or 0.
func faultCode(faults []fault.Fired, topic string, partition int32) int16 {
	for _, f := range faults {
		if f.Topic == topic && (f.Partition < 0 || f.Partition == partition) {
			return f.ErrorCode
		}
	}
	return 0
}

// produceWithFaults answers the faulted partitions with their codes and
// serves the others: nothing is appended to a faulted partition.
func (b *Broker) produceWithFaults(ctx context.Context, r *protocol.Request, faults []fault.Fired) kmsg.Response {
	req := r.Body.(*kmsg.ProduceRequest)
	type failed struct {
		topic     string
		partition int32
		code      int16
	}
	var fails []failed
	kept := req.Topics[:0]
	for _, rt := range req.Topics {
		parts := rt.Partitions[:0]
		for _, rp := range rt.Partitions {
			if code := faultCode(faults, rt.Topic, rp.Partition); code != 0 {
				fails = append(fails, failed{rt.Topic, rp.Partition, code})
				continue
			}
			parts = append(parts, rp)
		}
		if len(parts) > 0 {
			rt.Partitions = parts
			kept = append(kept, rt)
		}
	}
	req.Topics = kept
	var resp *kmsg.ProduceResponse
	if len(req.Topics) > 0 {
		if out := b.handleProduce(ctx, r); out != nil {
			resp = out.(*kmsg.ProduceResponse)
		}
	}
	if req.Acks == 0 {
		return nil
	}
	if resp == nil {
		resp = req.ResponseKind().(*kmsg.ProduceResponse)
	}
	for _, f := range fails {
		i := 0
		for i < len(resp.Topics) && resp.Topics[i].Topic != f.topic {
			i++
		}
		if i == len(resp.Topics) {
			st := kmsg.NewProduceResponseTopic()
			st.Topic = f.topic
			resp.Topics = append(resp.Topics, st)
		}
		sp := kmsg.NewProduceResponseTopicPartition()
		sp.Partition, sp.ErrorCode = f.partition, f.code
		sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, sp)
		b.metrics.ProduceErrors.WithLabelValues(kerr.ErrorForCode(f.code).Error()).Inc()
	}
	return resp
}

// fetchWithFaults answers the faulted partitions with their codes, not
// read, and fetches the others. They stay in the request's fetch session
// (a session holds what the client sent, as Kafka's, whatever the read
// answered), and the response comes at once, as Kafka answers a read
// error (ReplicaManager.fetchMessages).
func (b *Broker) fetchWithFaults(ctx context.Context, r *protocol.Request, faults []fault.Fired) kmsg.Response {
	return b.fetch(ctx, r, func(topic string, partition int32) int16 { return faultCode(faults, topic, partition) })
}
