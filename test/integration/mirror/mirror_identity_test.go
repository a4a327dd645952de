package mirror

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// Source identity: a mirror copies one source cluster and one
// incarnation of each topic. These tests run the scenario with the rule
// and, as the negative control, with it switched off through the mirror's
// test hooks.

// producePrefixed writes prefix-0 … prefix-(n-1) to partition p.
func producePrefixed(t *testing.T, addr, topic string, p int32, prefix string, n int) {
	t.Helper()
	cl := itest.NewClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// waitPartitions polls a mirror's describe until every partition of topic
// satisfies ok, and returns them.
func waitPartitions(t *testing.T, m *mirror.Manager, name, topic string, what string, ok func(mirror.PartitionStatus) bool) []mirror.PartitionStatus {
	t.Helper()
	var last []mirror.PartitionStatus
	for deadline := time.Now().Add(itest.Timeout); ; time.Sleep(20 * time.Millisecond) {
		st, err := m.Describe(name)
		if err != nil {
			t.Fatal(err)
		}
		last = last[:0]
		all := true
		for _, p := range st.Partitions {
			if p.Topic == topic {
				last = append(last, p)
				all = all && ok(p)
			}
		}
		if all && len(last) > 0 {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never %s: %+v", name, what, last)
		}
	}
}

func mirroringAt(end int64) func(mirror.PartitionStatus) bool {
	return func(p mirror.PartitionStatus) bool { return p.State == mirror.Mirroring && p.LocalLogEndOffset == end }
}

// recreateOnMinibroker deletes topic at a minibroker source and creates it
// again (a new topic id) with n records.
func recreateOnMinibroker(t *testing.T, addr, topic string, n int) {
	t.Helper()
	adm := itest.KadmClient(t, addr)
	ctx := context.Background()
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(itest.Timeout); ; time.Sleep(20 * time.Millisecond) {
		r, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
		if err == nil && r.Err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recreate %s: %v %v", topic, err, r.Err)
		}
	}
	// One batch per record: the mirror's fetch from offset 10 then
	// starts at a batch boundary of the new topic.
	itest.ProduceSerially(t, itest.IdempotentProducer(t, addr), topic, 0, "new", n)
}

// TestMirrorSourceTopicRecreatedFails: the source topic is deleted and
// created again under the same name with more records than the mirror
// has. The mirror (Fetch v13, by topic id) must not append a record of
// the new topic: the topic goes FAILED with a reason naming both ids, the
// local log byte for byte as it was, and it is not retried. Negative
// control: with the topic-id check off (and the truncation guard, the
// other rule in the way), the new topic's records 10..14 are appended
// after the old topic's 0..9, or the old records are cut and replaced.
func TestMirrorSourceTopicRecreatedFails(t *testing.T) {
	t.Parallel()
	for _, check := range []bool{true, false} {
		t.Run(fmt.Sprintf("check=%v", check), func(t *testing.T) {
			t.Parallel()
			a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
			producePrefixed(t, a.Addr(), "orders", 0, "old", 10)
			b := itest.StartBroker(t, itest.BrokerOptions{Mirror: mirror.WithTestHooks(mirror.Options{}, itest.MirrorHooks{NoTopicIDCheck: !check, NoTruncateGuard: !check})})
			m := itest.MirrorOn(b)
			itest.Must(t, "create", m.CreateWith("from-a", []string{a.Addr()}, mirror.CreateOptions{
				Config: map[string]string{mirror.SettingFailedRetryInitialMs: "20"}}))
			itest.Must(t, "start", m.Start(t.Context(), "from-a", []string{"orders"}))
			waitPartitions(t, m, "from-a", "orders", "caught up", mirroringAt(10))
			before := itest.RawLog(t, b, "orders", 0, 0, 10)
			oldID := itest.KadmMetadata(t, a.Addr(), "orders").Topics["orders"].ID

			recreateOnMinibroker(t, a.Addr(), "orders", 15)
			newID := itest.KadmMetadata(t, a.Addr(), "orders").Topics["orders"].ID
			if oldID == newID {
				t.Fatal("the recreated topic kept its id")
			}
			if !check {
				for deadline := time.Now().Add(itest.Timeout); itest.LogEnd(b, "orders", 0) != 15; time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) {
						st, _ := m.Describe("from-a")
						t.Fatalf("without the check, the new topic's records never came: %+v", st.Partitions)
					}
				}
				// Which harm comes depends on when the fetcher looks: a fetch
				// after the recreation appends the new topic's 10..14 to the
				// old 0..9; one while the new topic is still shorter is out of
				// range and PREPARING cuts the old records.
				got := itest.ReadValues(t, b.Addr(), "orders", 0, 0)
				t.Logf("without the topic-id check (and the truncation guard) the mirror holds %v", got)
				if got[14] != "new-14" || (got[9] == "old-9") == (got[0] == "new-0") {
					t.Fatalf("without the check: %v, want the new topic's records after old-0..old-9, or instead of them", got)
				}
				return
			}
			ps := waitPartitions(t, m, "from-a", "orders", "FAILED", func(p mirror.PartitionStatus) bool { return p.State == mirror.Failed })
			reason := ps[0].Reason
			for _, want := range []string{"recreated", fmt.Sprintf("%x", oldID[:]), fmt.Sprintf("%x", newID[:]), "not retried"} {
				if !strings.Contains(reason, want) {
					t.Fatalf("reason %q lacks %q", reason, want)
				}
			}
			time.Sleep(300 * time.Millisecond) // 15 initial backoffs: a retry would have come
			st, _ := m.Describe("from-a")
			if p := st.Partitions[0]; p.State != mirror.Failed || p.Retries != 0 || p.Retriable || p.NextRetryAt != 0 {
				t.Fatalf("after a while: %+v, want FAILED, never retried", p)
			}
			if end := itest.LogEnd(b, "orders", 0); end != 10 {
				t.Fatalf("local log end %d, want 10", end)
			}
			if after := itest.RawLog(t, b, "orders", 0, 0, 10); !bytes.Equal(before, after) {
				t.Fatal("the local log changed")
			}
			// Starting it again is refused with the same reason, changing nothing.
			if err := m.Start(t.Context(), "from-a", []string{"orders"}); err == nil || !strings.Contains(err.Error(), "recreated") {
				t.Fatalf("start after the recreation: %v", err)
			}
		})
	}
}

// kafka30Source is a kfake cluster that speaks Kafka 3.0's API versions:
// Metadata has topic ids, Fetch (v12) names topics.
func kafka30Source(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.MaxVersions(kversion.V3_0_0())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestMirrorTopicRecreatedFetchByName: the same with a source whose Fetch
// names topics (Kafka 3.0's v12: no topic ids), where a fetch after the
// recreation reads the new topic's batches and nothing in the fetch tells
// them apart. The mirror checks the topic id with Metadata after such a
// fetch and before appending; the negative control appends them.
func TestMirrorTopicRecreatedFetchByName(t *testing.T) {
	t.Parallel()
	for _, check := range []bool{true, false} {
		t.Run(fmt.Sprintf("check=%v", check), func(t *testing.T) {
			t.Parallel()
			src := kafka30Source(t, kfake.SeedTopics(1, "orders"), kfake.ClusterID("kafka-3-0"))
			addr := src.ListenAddrs()[0]
			producePrefixed(t, addr, "orders", 0, "old", 10)
			b := itest.StartBroker(t, itest.BrokerOptions{Mirror: mirror.WithTestHooks(mirror.Options{}, itest.MirrorHooks{NoTopicIDCheck: !check, NoTruncateGuard: !check})})
			m := itest.MirrorOn(b)
			itest.Must(t, "create", m.Create("from-kfake", []string{addr}, ""))
			itest.Must(t, "start", m.Start(t.Context(), "from-kfake", []string{"orders"}))
			waitPartitions(t, m, "from-kfake", "orders", "caught up", mirroringAt(10))
			before := itest.RawLog(t, b, "orders", 0, 0, 10)

			// Paused while the topic is recreated and filled: a fetch at 10
			// in between, while the new topic is shorter, would be out of
			// range, which fails the partition on its own (the source's
			// log went backwards) and hides what the check is for.
			itest.Must(t, "pause", m.Pause("from-kfake", []string{"orders"}))
			itest.Must(t, "delete", src.DeleteTopic("orders"))
			itest.Must(t, "create", src.CreateTopic("orders", 1, nil))
			itest.ProduceSerially(t, itest.IdempotentProducer(t, addr), "orders", 0, "new", 15)
			itest.Must(t, "resume", m.Resume("from-kfake", []string{"orders"}))
			if !check {
				itest.WaitFor(t, "the new topic's records appended", func() bool { return itest.LogEnd(b, "orders", 0) == 15 })
				return
			}
			ps := waitPartitions(t, m, "from-kfake", "orders", "FAILED", func(p mirror.PartitionStatus) bool { return p.State == mirror.Failed })
			if !strings.Contains(ps[0].Reason, "recreated") {
				t.Fatalf("reason %q", ps[0].Reason)
			}
			if after := itest.RawLog(t, b, "orders", 0, 0, 10); itest.LogEnd(b, "orders", 0) != 10 || !bytes.Equal(before, after) {
				t.Fatalf("the local log changed (end %d)", itest.LogEnd(b, "orders", 0))
			}
		})
	}
}

// TestMirrorSourceClusterIDChangedFails: the mirror's source address comes
// to be served by another cluster (kfake "two" where kfake "one" was) with
// the same topic and more records. Every partition of the mirror goes
// FAILED with both cluster ids in the reason, none is retried (the retry
// backoff is 20 ms), and the local logs stay as they were. Negative
// control (identity and topic-id checks off): cluster two's records are
// appended.
func TestMirrorSourceClusterIDChangedFails(t *testing.T) {
	t.Parallel()
	for _, check := range []bool{true, false} {
		t.Run(fmt.Sprintf("check=%v", check), func(t *testing.T) {
			t.Parallel()
			port := itest.FreePort(t)
			one, err := kfake.NewCluster(kfake.Ports(port), kfake.SeedTopics(2, "orders"), kfake.ClusterID("cluster-one"))
			if err != nil {
				t.Fatal(err)
			}
			addr := one.ListenAddrs()[0]
			for p := int32(0); p < 2; p++ {
				producePrefixed(t, addr, "orders", p, "one", 5)
			}
			b := itest.StartBroker(t, itest.BrokerOptions{Mirror: mirror.WithTestHooks(mirror.Options{}, itest.MirrorHooks{NoIdentityCheck: !check, NoTopicIDCheck: !check, NoTruncateGuard: !check})})
			m := itest.MirrorOn(b)
			// --no-check: the cluster id is recorded at the first contact.
			itest.Must(t, "create", m.CreateWith("from-one", []string{addr}, mirror.CreateOptions{
				Config: map[string]string{mirror.SettingFailedRetryInitialMs: "20"}}))
			itest.Must(t, "start", m.Start(t.Context(), "from-one", []string{"orders"}))
			waitPartitions(t, m, "from-one", "orders", "caught up", mirroringAt(5))
			if st, _ := m.Describe("from-one"); check && st.SourceClusterID != "cluster-one" {
				t.Fatalf("source cluster id %q recorded, want cluster-one", st.SourceClusterID)
			}
			before := [][]byte{itest.RawLog(t, b, "orders", 0, 0, 5), itest.RawLog(t, b, "orders", 1, 0, 5)}
			one.Close()

			two, err := kfake.NewCluster(kfake.Ports(port), kfake.SeedTopics(2, "orders"), kfake.ClusterID("cluster-two"))
			if err != nil {
				t.Fatal(err)
			}
			defer two.Close()
			for p := int32(0); p < 2; p++ {
				itest.ProduceSerially(t, itest.IdempotentProducer(t, addr), "orders", p, "two", 8)
			}
			if !check {
				itest.WaitFor(t, "cluster two's records appended", func() bool { return itest.LogEnd(b, "orders", 0) == 8 && itest.LogEnd(b, "orders", 1) == 8 })
				return
			}
			ps := waitPartitions(t, m, "from-one", "orders", "FAILED", func(p mirror.PartitionStatus) bool { return p.State == mirror.Failed })
			for _, p := range ps {
				for _, want := range []string{"cluster-one", "cluster-two", "not retried"} {
					if !strings.Contains(p.Reason, want) {
						t.Fatalf("partition %d: reason %q lacks %q", p.Partition, p.Reason, want)
					}
				}
			}
			time.Sleep(300 * time.Millisecond)
			st, _ := m.Describe("from-one")
			for i, p := range st.Partitions {
				if p.State != mirror.Failed || p.Retries != 0 || p.NextRetryAt != 0 {
					t.Fatalf("after a while: %+v, want FAILED, never retried", p)
				}
				if itest.LogEnd(b, "orders", p.Partition) != 5 || !bytes.Equal(before[i], itest.RawLog(t, b, "orders", p.Partition, 0, 5)) {
					t.Fatalf("orders-%d changed", p.Partition)
				}
			}
			if st.SourceClusterID != "cluster-one" {
				t.Fatalf("the recorded cluster id became %q", st.SourceClusterID)
			}
		})
	}
}

// denyFetches makes the kfake source answer every Fetch that names a
// topic denied selects with TOPIC_AUTHORIZATION_FAILED for its partitions,
// as Kafka does for a principal without READ on the topic.
func denyFetches(src *kfake.Cluster, denied func(topic string) bool) {
	src.ControlKey(kmsg.Fetch.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		src.KeepControl()
		fr := req.(*kmsg.FetchRequest)
		any := false
		for _, t := range fr.Topics {
			any = any || denied(t.Topic)
		}
		if !any {
			return nil, nil, false
		}
		resp := fr.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range fr.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
}

// TestMirrorRetriesFailedPartition: the source denies the mirror's fetch
// of the partition (TOPIC_AUTHORIZATION_FAILED, as a missing ACL does)
// until the test lifts it. The partition goes FAILED for a retriable
// reason, is started again with growing backoff (the count in describe),
// and once the source serves it catches up. With max attempts 2, a
// partition whose source keeps refusing stays FAILED after 2 retries.
func TestMirrorRetriesFailedPartition(t *testing.T) {
	t.Parallel()
	src := kafka30Source(t, kfake.SeedTopics(1, "orders", "denied"), kfake.ClusterID("kfake-acl"))
	addr := src.ListenAddrs()[0]
	producePrefixed(t, addr, "orders", 0, "v", 20)
	producePrefixed(t, addr, "denied", 0, "v", 3)
	var deny atomic.Bool
	deny.Store(true)
	denyFetches(src, func(topic string) bool { return topic == "denied" || (topic == "orders" && deny.Load()) })

	b := minibrokertest.Start(t)
	m := b.Broker().Mirrors()
	itest.Must(t, "create", m.CreateWith("from-kfake", []string{addr}, mirror.CreateOptions{Config: map[string]string{
		mirror.SettingFailedRetryInitialMs: "50", mirror.SettingFailedRetryMaxMs: "400", mirror.SettingFailedRetryMaxAttempts: "2"}}))
	itest.Must(t, "create", m.CreateWith("from-kfake-2", []string{addr}, mirror.CreateOptions{Config: map[string]string{
		mirror.SettingFailedRetryInitialMs: "50", mirror.SettingFailedRetryMaxMs: "400", mirror.SettingFailedRetryMaxAttempts: "1000"}}))
	itest.Must(t, "start", m.Start(t.Context(), "from-kfake", []string{"denied"}))
	itest.Must(t, "start", m.Start(t.Context(), "from-kfake-2", []string{"orders"}))

	// Retriable, retried with a backoff that grows: 50, 100, 200, 400, 400 ms.
	var waits []int64
	seen := map[int]bool{}
	for deadline := time.Now().Add(itest.Timeout); len(waits) < 4; time.Sleep(5 * time.Millisecond) {
		st, _ := m.Describe("from-kfake-2")
		p := st.Partitions[0]
		if p.State == mirror.Failed {
			if !p.Retriable || !strings.Contains(p.Reason, "TOPIC_AUTHORIZATION_FAILED") {
				t.Fatalf("FAILED %+v: want retriable, the source's error in the reason", p)
			}
			if !seen[p.Retries] && p.NextRetryAt > 0 {
				seen[p.Retries] = true
				waits = append(waits, p.NextRetryAt-time.Now().UnixMilli())
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("saw %d retries scheduled: %v", len(waits), waits)
		}
	}
	t.Logf("time left to the retries as first seen: %v ms", waits)
	if waits[3] <= waits[0] || waits[3] > 400 {
		t.Fatalf("the 4th retry was due in %d ms, the 1st in %d: want a backoff that grows (50·2³, capped at 400)", waits[3], waits[0])
	}
	deny.Store(false)
	ps := waitPartitions(t, m, "from-kfake-2", "orders", "caught up after the source allowed it", mirroringAt(20))
	if ps[0].Retries < 4 {
		t.Fatalf("describe shows %d retries, want ≥ 4", ps[0].Retries)
	}
	if got := itest.ReadValues(t, b.Addr(), "orders", 0, 0); strings.Join(got, ",") != strings.Join(itest.Values("v", 20), ",") {
		t.Fatalf("mirrored %v", got)
	}

	// Bounded: two retries, then FAILED for good.
	ps = waitPartitions(t, m, "from-kfake", "denied", "given up", func(p mirror.PartitionStatus) bool {
		return p.State == mirror.Failed && p.Retries == 2 && p.NextRetryAt == 0
	})
	if !strings.Contains(ps[0].Reason, mirror.SettingFailedRetryMaxAttempts) {
		t.Fatalf("reason %q does not say why no retry comes", ps[0].Reason)
	}
	time.Sleep(500 * time.Millisecond)
	if st, _ := m.Describe("from-kfake"); st.Partitions[0].Retries != 2 || st.Partitions[0].State != mirror.Failed {
		t.Fatalf("after giving up: %+v", st.Partitions[0])
	}
}

// TestMirrorRetrySurvivesRestart: a partition FAILED for a retriable
// reason, waiting for its retry, stays FAILED across a restart of the
// broker and is retried when the retry comes due; it then catches up.
func TestMirrorRetrySurvivesRestart(t *testing.T) {
	t.Parallel()
	src := kafka30Source(t, kfake.SeedTopics(1, "orders"), kfake.ClusterID("kfake-restart"))
	addr := src.ListenAddrs()[0]
	producePrefixed(t, addr, "orders", 0, "v", 7)
	var deny atomic.Bool
	deny.Store(true)
	denyFetches(src, func(string) bool { return deny.Load() })
	b := minibrokertest.Start(t)
	itest.Must(t, "create", b.Broker().Mirrors().CreateWith("from-kfake", []string{addr}, mirror.CreateOptions{Config: map[string]string{
		mirror.SettingFailedRetryInitialMs: "2000"}}))
	itest.Must(t, "start", b.Broker().Mirrors().Start(t.Context(), "from-kfake", []string{"orders"}))
	waitPartitions(t, b.Broker().Mirrors(), "from-kfake", "orders", "FAILED, retry pending", func(p mirror.PartitionStatus) bool {
		return p.State == mirror.Failed && p.NextRetryAt > 0 && p.Retries == 0
	})
	deny.Store(false)
	b.Restart()
	st, err := b.Broker().Mirrors().Describe("from-kfake")
	itest.Must(t, "describe", err)
	if p := st.Partitions[0]; p.State != mirror.Failed || p.NextRetryAt == 0 {
		t.Logf("right after the restart (the retry may have come already on a slow machine): %+v", p)
	}
	ps := waitPartitions(t, b.Broker().Mirrors(), "from-kfake", "orders", "caught up after the retry", mirroringAt(7))
	if ps[0].Retries != 1 {
		t.Fatalf("retries %d after the restart, want 1", ps[0].Retries)
	}
}
