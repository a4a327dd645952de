package mirror

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorCopiesTopicIdentity: the local topic gets the source's
// partition count, topic id and topic-level overrides; mirror metrics are
// exported.
func TestMirrorCopiesTopicIdentity(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.TopicWithConfigs("orders", 3, map[string]string{"retention.ms": "3600000"}))
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "orders", 1, "a", 3)
	b := minibrokertest.Start(t)
	b.Mirror("from-a", a.Addr()).Start("orders").WaitCaughtUp(itest.Timeout)
	at, _ := a.Broker().Topic("orders")
	bt, ok := b.Broker().Topic("orders")
	if !ok || bt.ID != at.ID || len(bt.Partitions) != 3 || bt.Configs["retention.ms"] != "3600000" {
		t.Fatalf("local topic %+v, source id %x", bt, at.ID)
	}
	reg := b.Broker().Registry()
	if n, err := testutil.GatherAndCount(reg, "minibroker_mirror_partition_state"); err != nil || n != 3 {
		t.Fatalf("state series: %d, %v", n, err)
	}
	// The byte count is added just after the append the wait above saw.
	for deadline := time.Now().Add(5 * time.Second); itest.MetricSum(t, reg, "minibroker_mirror_bytes_total") <= 0; {
		if time.Now().After(deadline) {
			t.Fatal("bytes mirrored metric stays 0")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Mirror("from-a").Stop()
	if got := itest.MetricSum(t, reg, "minibroker_mirror_barriers_written_total"); got != 3 {
		t.Fatalf("barriers metric %v, want 3", got)
	}
}

// TestMirrorSourceLogStartMovedPast: while the mirror is paused the
// source deletes records past where the mirror is; on resume the mirror
// restarts at the source's log start (the gap cannot be filled) and
// continues.
func TestMirrorSourceLogStartMovedPast(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	pa := itest.IdempotentProducer(t, a.Addr())
	itest.ProduceSerially(t, pa, "orders", 0, "early", 3)
	b := minibrokertest.Start(t)
	m := b.Mirror("from-a", a.Addr()).Start("orders")
	m.WaitCaughtUp(itest.Timeout)
	m.Pause()
	itest.ProduceSerially(t, pa, "orders", 0, "gone", 4) // 3..6
	adm := kadm.NewClient(itest.NewClient(t, a.Addr()))
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 6})
	if r, err := adm.DeleteRecords(context.Background(), del); err != nil || r.Error() != nil {
		t.Fatalf("delete records: %v %v", err, r.Error())
	}
	itest.ProduceSerially(t, pa, "orders", 0, "late", 2) // 7..8
	m.Resume()
	m.WaitCaughtUp(itest.Timeout)
	part := itest.MustPartition(t, b, "orders", 0)
	if o := part.Offsets(); o.LogStart != 6 || o.LogEnd != 9 {
		t.Fatalf("mirror offsets %+v, want log start 6 and end 9", o)
	}
	if ra, rb := itest.RawLog(t, a, "orders", 0, 6, 9), itest.RawLog(t, b, "orders", 0, 6, 9); len(ra) == 0 || string(ra) != string(rb) {
		t.Fatalf("logs differ in [6, 9): %d vs %d bytes", len(ra), len(rb))
	}
	itest.AssertValues(t, b, "orders", 0, append(itest.Values("gone", 4)[3:], itest.Values("late", 2)...))
}

// TestMirrorBinaryKill9WhileMirroring: the destination binary is killed
// with SIGKILL while the source is written; restarted, it resumes from its
// log end and ends byte-identical.
func TestMirrorBinaryKill9WhileMirroring(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 2))
	dir := t.TempDir()
	b := itest.StartBinary(t, dir)
	admin := "--admin=" + b.HttpAddr
	for _, args := range [][]string{{"mirror", "create", "from-a", "--source", a.Addr()}, {"mirror", "start", "from-a", "--topics", "orders"}} {
		if out, err := itest.RunCLI(t, append(args, admin)...); err != nil {
			t.Fatalf("%v: %v %s", args, err, out)
		}
	}
	prod := itest.NewClient(t, a.Addr(), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	produce := func(n int) {
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Value: make([]byte, 500)})
		}
		if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(2000)
	time.Sleep(50 * time.Millisecond)
	b.Stop(t, syscall.SIGKILL)
	produce(2000)
	b = itest.StartBinary(t, dir)
	c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(itest.Timeout)
	for p := int32(0); p < 2; p++ {
		want := itest.LogEnd(a, "orders", p)
		for itest.EndOffset(t, c, "orders", p) < want {
			if time.Now().After(deadline) {
				t.Fatalf("partition %d not caught up after restart", p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The binary's log, read back over the wire, equals the source's.
	for p := int32(0); p < 2; p++ {
		src := itest.ReadValues(t, a.Addr(), "orders", p, 0)
		dst := itest.ReadValues(t, b.Addr, "orders", p, 0)
		if len(src) != len(dst) {
			t.Fatalf("partition %d: %d records mirrored, %d at the source", p, len(dst), len(src))
		}
	}
	b.Stop(t, syscall.SIGTERM)
}
