package storage

import (
	"context"
	"fmt"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestRestartManyPartitionsParallel: a broker with 256 partitions closes
// and opens them 8 at a time (num.recovery.threads.per.data.dir=8, issue
// #9). After a clean restart and after a crash every partition holds its
// records at their offsets, every producer's state is what it was
// (DescribeProducers), a retried idempotent batch is still answered as a
// duplicate with its original offset, and the kgo producer goes on with
// its sequence.
func TestRestartManyPartitionsParallel(t *testing.T) {
	t.Parallel()
	const topic, parts = "many", 256
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, parts),
		minibrokertest.Set("num.recovery.threads.per.data.dir", "8"))
	ctx := context.Background()

	// A raw idempotent producer writes 2 records to every partition in
	// one Produce request; resending that request is a retry.
	raw := &itest.RawProducer{Rc: itest.DialRaw(t, c.Addr())}
	pid, epoch := raw.InitProducerID(t)
	retry := kmsg.NewPtrProduceRequest()
	retry.Version, retry.Acks, retry.TimeoutMillis = 9, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p := range int32(parts) {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, itest.ProducerBatch(pid, epoch, 0, 2)
		rt.Partitions = append(rt.Partitions, rp)
	}
	retry.Topics = append(retry.Topics, rt)
	produceAll := func(stage string) {
		t.Helper()
		raw.Corr++
		raw.Rc.Write(itest.RequestFrame(retry, raw.Corr))
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = retry.Version
		if err := resp.ReadFrom(raw.Rc.ReadResponse(raw.Corr, true)); err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != parts {
			t.Fatalf("%s: response covers %d topics", stage, len(resp.Topics))
		}
		for _, sp := range resp.Topics[0].Partitions {
			if sp.ErrorCode != 0 || sp.BaseOffset != 0 {
				t.Fatalf("%s: partition %d: code %d base %d, want 0 at 0", stage, sp.Partition, sp.ErrorCode, sp.BaseOffset)
			}
		}
	}
	produceAll("first")

	// A kgo idempotent producer then writes one record per partition per
	// round, with the same client across restarts.
	prod := itest.IdempotentProducer(t, c.Addr())
	want := map[int32][]string{}
	for p := range int32(parts) {
		want[p] = []string{"a", "b"} // producerBatch's values
	}
	round := func(name string) {
		t.Helper()
		var recs []*kgo.Record
		for p := range int32(parts) {
			v := fmt.Sprintf("%s-%d", name, p)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
			want[p] = append(want[p], v)
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	round("r0")
	round("r1")

	adm := kadm.NewClient(itest.NewClient(t, c.Addr()))
	producers := func(stage string) map[int32][]kadm.DescribedProducer {
		t.Helper()
		set := kadm.TopicsSet{topic: {}}
		for p := range int32(parts) {
			set[topic][p] = struct{}{}
		}
		ds, err := adm.DescribeProducers(ctx, set)
		if err != nil {
			t.Fatalf("%s: DescribeProducers: %v", stage, err)
		}
		out := map[int32][]kadm.DescribedProducer{}
		ds.EachPartition(func(dp kadm.DescribedProducersPartition) {
			if dp.Err != nil {
				t.Fatalf("%s: DescribeProducers %d: %v", stage, dp.Partition, dp.Err)
			}
			for _, pr := range dp.ActiveProducers.Sorted() {
				pr.LastTimestamp = 0 // compared below apart from the clock
				out[dp.Partition] = append(out[dp.Partition], pr)
			}
		})
		return out
	}
	check := func(stage string, before map[int32][]kadm.DescribedProducer) {
		t.Helper()
		after := producers(stage)
		for p := range int32(parts) {
			if len(before[p]) != 2 || fmt.Sprint(after[p]) != fmt.Sprint(before[p]) {
				t.Fatalf("%s: partition %d producers\n  %+v\nwant\n  %+v", stage, p, after[p], before[p])
			}
		}
		produceAll(stage + ": retry") // duplicates: the original offset 0
		got := map[int32][]string{}
		n := 0
		for _, vs := range want {
			n += len(vs)
		}
		for _, r := range itest.ConsumeAll(t, c.Addr(), topic, n) {
			if r.Offset != int64(len(got[r.Partition])) {
				t.Fatalf("%s: partition %d offset %d, want %d", stage, r.Partition, r.Offset, len(got[r.Partition]))
			}
			got[r.Partition] = append(got[r.Partition], string(r.Value))
		}
		for p := range int32(parts) {
			if fmt.Sprint(got[p]) != fmt.Sprint(want[p]) {
				t.Fatalf("%s: partition %d holds %v, want %v", stage, p, got[p], want[p])
			}
		}
	}

	before := producers("before restart")
	c.Restart()
	raw = &itest.RawProducer{Rc: itest.DialRaw(t, c.Addr()), Corr: raw.Corr}
	check("after restart", before)
	round("r2")

	before = producers("before crash")
	c.Kill()
	c.Revive()
	raw = &itest.RawProducer{Rc: itest.DialRaw(t, c.Addr()), Corr: raw.Corr}
	check("after crash", before)
	round("r3")
	check("after crash, r3", producers("after r3"))
}
