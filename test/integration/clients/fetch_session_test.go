package clients

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/minibroker/minibroker/minibrokertest"
)

// fetchSessionClient is a kgo client whose Fetch requests go out at
// version (below 13 topics are named, from 13 by ID).
func fetchSessionClient(t *testing.T, addr string, version int16) *kgo.Client {
	t.Helper()
	v := kversion.Stable()
	v.SetMaxKeyVersion(1, version)
	return itest.NewClient(t, addr, kgo.MaxVersions(v))
}

// sessionFetch sends one Fetch of the given partitions (at their fetch
// offsets) and forgotten partitions, with a short wait.
type sessionFetch struct {
	id, epoch int32
	parts     map[int32]int64 // partition → fetch offset
	forget    []int32
}

func (f sessionFetch) send(t *testing.T, cl *kgo.Client, topic string, topicID [16]byte) *kmsg.FetchResponse {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 50, 1, 1<<20
	req.SessionID, req.SessionEpoch = f.id, f.epoch
	if len(f.parts) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		for _, p := range sortedKeys(f.parts) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, f.parts[p], 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(f.forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = topic, topicID, f.forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func sortedKeys(m map[int32]int64) []int32 {
	ks := make([]int32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

// answered lists a response's partitions as "p:records" ("p:E<code>"
// for an error), in order.
func answered(resp *kmsg.FetchResponse) []string {
	var out []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				out = append(out, fmt.Sprintf("%d:E%d", rp.Partition, rp.ErrorCode))
				continue
			}
			fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: rt.Topic, Partition: rp.Partition, KeepControlRecords: true}, &rp, kgo.DefaultDecompressor(), nil)
			out = append(out, fmt.Sprintf("%d:%d", rp.Partition, len(fp.Records)))
		}
	}
	return out
}

func produceInto(t *testing.T, cl *kgo.Client, topic string, partition int32, n int) {
	t.Helper()
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: partition, Value: fmt.Appendf(nil, "v%d", i)}
		itest.Must(t, "produce", cl.ProduceSync(context.Background(), r).FirstErr())
	}
}

func sessionTopic(t *testing.T, c *minibrokertest.Cluster, topic string, parts int32) (*kgo.Client, [16]byte) {
	t.Helper()
	prod := itest.NewClient(t, c.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(prod)
	resp, err := adm.CreateTopic(context.Background(), parts, 1, nil, topic)
	itest.Must(t, "create topic", err)
	itest.Must(t, "create topic", resp.Err)
	return prod, resp.ID
}

// TestFetchSessionless: a full fetch with epoch -1 (FINAL_EPOCH) gets its
// partitions' records and no session, whatever session id it carries:
// -1 and 0 (Kafka's sessionless fetch), or an id the broker does not
// know. Before fetch sessions were served, the -1 and unknown-id cases
// answered FETCH_SESSION_ID_NOT_FOUND with no topics.
func TestFetchSessionless(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.HTTP())
	prod, id := sessionTopic(t, c, "sessionless", 2)
	produceInto(t, prod, "sessionless", 0, 3)
	produceInto(t, prod, "sessionless", 1, 2)
	for _, version := range []int16{12, 16} {
		cl := fetchSessionClient(t, c.Addr(), version)
		for _, sid := range []int32{-1, 0, 123456} {
			resp := sessionFetch{id: sid, epoch: -1, parts: map[int32]int64{0: 0, 1: 0}}.send(t, cl, "sessionless", id)
			got := fmt.Sprint(answered(resp))
			if resp.ErrorCode != 0 || resp.SessionID != 0 || got != "[0:3 1:2]" {
				t.Fatalf("v%d session id %d epoch -1: error %v, session %d, partitions %s; want no error, session 0, [0:3 1:2]",
					version, sid, kerr.ErrorForCode(resp.ErrorCode), resp.SessionID, got)
			}
		}
	}
	if n := itest.MetricValue(t, c.HTTPAddr(), "minibroker_fetch_sessions", ""); n != 0 {
		t.Fatalf("%v sessions in the cache after sessionless fetches, want 0", n)
	}
}

// TestFetchSessionIncremental drives one session through Kafka's
// contract, at a version naming topics (12) and one naming them by ID
// (16): a full fetch opens it; incremental fetches name only changed
// partitions and get only partitions with something new; forgotten
// partitions leave it; a wrong epoch answers INVALID_FETCH_SESSION_EPOCH
// and leaves the session usable; an unknown id FETCH_SESSION_ID_NOT_FOUND;
// the other topic-naming family FETCH_SESSION_TOPIC_ID_ERROR; a full
// fetch naming the session closes it; forgetting every partition closes
// it too.
func TestFetchSessionIncremental(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t)
	for _, version := range []int16{12, 16} {
		topic := fmt.Sprintf("incremental-v%d", version)
		prod, id := sessionTopic(t, c, topic, 3)
		produceInto(t, prod, topic, 0, 3)
		produceInto(t, prod, topic, 1, 2)
		cl := fetchSessionClient(t, c.Addr(), version)
		other := fetchSessionClient(t, c.Addr(), 28-version) // 12 ↔ 16
		step := func(what string, f sessionFetch, wantCode error, wantParts string) *kmsg.FetchResponse {
			t.Helper()
			resp := f.send(t, cl, topic, id)
			got := fmt.Sprint(answered(resp))
			if kerr.ErrorForCode(resp.ErrorCode) != wantCode || got != wantParts {
				t.Fatalf("v%d %s: error %v, partitions %s; want %v, %s", version, what, kerr.ErrorForCode(resp.ErrorCode), got, wantCode, wantParts)
			}
			return resp
		}
		resp := step("full fetch", sessionFetch{epoch: 0, parts: map[int32]int64{0: 0, 1: 0, 2: 0}}, nil, "[0:3 1:2 2:0]")
		sid := resp.SessionID
		if sid <= 0 {
			t.Fatalf("v%d: full fetch answered session id %d, want a new session", version, sid)
		}
		// Partition 0 moves to its end; 1 is not named (its cached offset
		// 0 reads its records again); 2 has nothing new: left out.
		step("incremental 1", sessionFetch{id: sid, epoch: 1, parts: map[int32]int64{0: 3}}, nil, "[1:2]")
		step("incremental 2, 1 moved", sessionFetch{id: sid, epoch: 2, parts: map[int32]int64{1: 2}}, nil, "[]")
		produceInto(t, prod, topic, 2, 1)
		step("incremental 3, a record on 2", sessionFetch{id: sid, epoch: 3}, nil, "[2:1]")
		step("wrong epoch", sessionFetch{id: sid, epoch: 9}, kerr.InvalidFetchSessionEpoch, "[]")
		step("unknown id", sessionFetch{id: sid + 1, epoch: 4}, kerr.FetchSessionIDNotFound, "[]")
		if r := (sessionFetch{id: sid, epoch: 4}).send(t, other, topic, id); kerr.ErrorForCode(r.ErrorCode) != kerr.FetchSessionTopicIDError {
			t.Fatalf("v%d session fetched at v%d: %v, want FETCH_SESSION_TOPIC_ID_ERROR", version, 28-version, kerr.ErrorForCode(r.ErrorCode))
		}
		// The errors left the session and its epoch alone. Forget 1: a
		// record on 1 is not answered; 2 (fetched from offset 0) is.
		step("forget 1", sessionFetch{id: sid, epoch: 4, parts: map[int32]int64{2: 1}, forget: []int32{1}}, nil, "[]")
		produceInto(t, prod, topic, 1, 1)
		produceInto(t, prod, topic, 0, 1)
		step("after forgetting 1", sessionFetch{id: sid, epoch: 5}, nil, "[0:1]")
		// Forgetting every partition closes the session: answered
		// sessionless (id 0), and the id is gone.
		resp = step("forget all", sessionFetch{id: sid, epoch: 6, forget: []int32{0, 2}}, nil, "[]")
		if resp.SessionID != 0 {
			t.Fatalf("v%d: forgetting every partition answered session %d, want 0", version, resp.SessionID)
		}
		step("closed session", sessionFetch{id: sid, epoch: 7}, kerr.FetchSessionIDNotFound, "[]")
		// A full fetch with epoch -1 naming a session closes it.
		sid = step("full fetch again", sessionFetch{epoch: 0, parts: map[int32]int64{0: 4}}, nil, "[0:0]").SessionID
		step("close with epoch -1", sessionFetch{id: sid, epoch: -1, parts: map[int32]int64{0: 0}}, nil, "[0:4]")
		step("closed by epoch -1", sessionFetch{id: sid, epoch: 1}, kerr.FetchSessionIDNotFound, "[]")
	}
}

// TestFetchSessionsKgo1000Partitions: kgo (which uses fetch sessions by
// default) consumes 1,000 partitions through a session: after the first
// full fetch its requests name only the partitions whose offsets moved,
// so the median Fetch request (the bytes kgo wrote for each, seen by a
// kgo write hook) is a fraction of a full fetch's. The median, not the
// mean: kgo may reset its session and send one more full fetch when it
// reassigns partitions (a consumer-session restart after a metadata
// update), which the protocol allows and which one CI run saw. The
// broker's own minibroker_fetch_sessions gauge shows the session exists.
// Negative control: the same consume with sessions off (the cache size
// 0, max.incremental.fetch.session.cache.slots) names all 1,000
// partitions in every request.
func TestFetchSessionsKgo1000Partitions(t *testing.T) {
	t.Parallel()
	const parts = 1000
	median := map[string]int{}
	for _, slots := range []string{"1000", "0"} {
		c := minibrokertest.Start(t, minibrokertest.HTTP(), minibrokertest.Set("max.incremental.fetch.session.cache.slots", slots))
		prod, _ := sessionTopic(t, c, "wide", parts)
		// A first record on every partition, so the first fetch moves
		// every offset.
		recs := make([]*kgo.Record, parts)
		for p := range recs {
			recs[p] = &kgo.Record{Topic: "wide", Partition: int32(p), Value: []byte("first")}
		}
		itest.Must(t, "produce", prod.ProduceSync(context.Background(), recs...).FirstErr())
		sizes := &fetchWrites{}
		cons := itest.NewClient(t, c.Addr(), kgo.ConsumeTopics("wide"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(20*time.Millisecond), kgo.WithHooks(sizes))
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		want, got := parts, 0
		poll := func() {
			for got < want {
				fs := cons.PollFetches(ctx)
				itest.Must(t, "consume", ctx.Err())
				fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
				got += fs.NumRecords()
			}
		}
		poll()
		sizes.Start()
		// Small batches on a few partitions at a time: the steady state
		// of a consumer of many partitions.
		for round := range 10 {
			batch := make([]*kgo.Record, 5)
			for i := range batch {
				batch[i] = &kgo.Record{Topic: "wide", Partition: int32((round*50 + i*7) % parts), Value: []byte("more")}
			}
			itest.Must(t, "produce", prod.ProduceSync(context.Background(), batch...).FirstErr())
			want += len(batch)
			poll()
		}
		all := sizes.Stop()
		if len(all) < 5 {
			t.Fatalf("cache slots %s: %d fetches after the first poll, want at least 5", slots, len(all))
		}
		median[slots] = all[len(all)/2]
		sessions := itest.MetricValue(t, c.HTTPAddr(), "minibroker_fetch_sessions", "")
		t.Logf("cache slots %s: %d fetches, request bytes %v, median %d, %.0f sessions", slots, len(all), all, median[slots], sessions)
		if (sessions > 0) != (slots != "0") {
			t.Fatalf("cache slots %s: %v sessions in the cache", slots, sessions)
		}
	}
	// A full fetch of 1,000 partitions is about 30 bytes a partition; an
	// incremental one names the few partitions that moved.
	if median["0"] < 20*parts || median["1000"] > median["0"]/10 {
		t.Fatalf("median request bytes per fetch: %d with sessions, %d without; want under a tenth, and over %d without",
			median["1000"], median["0"], 20*parts)
	}
}

// fetchWrites is a kgo write hook that records the size of every Fetch
// request written between start and stop.
type fetchWrites struct {
	mu    sync.Mutex
	on    bool
	sizes []int
}

func (w *fetchWrites) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.on && err == nil && key == int16(kmsg.Fetch) {
		w.sizes = append(w.sizes, n)
	}
}

func (w *fetchWrites) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on = true
}

// Stop returns the sizes recorded, sorted.
func (w *fetchWrites) Stop() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on = false
	sort.Ints(w.sizes)
	return w.sizes
}
