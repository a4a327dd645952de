package hostile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	mbt "github.com/minibroker/minibroker/minibrokertest"
)

// A retriable error (NOT_LEADER_OR_FOLLOWER) on the next 3 Produce
// requests: kgo retries through them, the record is acknowledged and
// stored once, and the fault fired exactly 3 times.
func TestFaultKgoRetriesRetriableError(t *testing.T) {
	c := mbt.Start(t, mbt.Topic("orders", 1))
	cl := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("orders"), kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }), kgo.MetadataMinAge(20*time.Millisecond))
	warm(t, cl)
	f := c.Fault(mbt.FaultSpec{Kind: mbt.FaultError, APIKey: mbt.Key(kmsg.Produce),
		ErrorCode: kerr.NotLeaderForPartition.Code, Count: 3})
	r, err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("o-1")}).First()
	if err != nil {
		t.Fatalf("kgo did not retry through a retriable error: %v", err)
	}
	if got := f.Fired(); got != 3 {
		t.Fatalf("fault fired %d times, want 3", got)
	}
	if st := f.Status(); st.Active {
		t.Fatalf("fault still active after its 3 firings: %+v", st)
	}
	if r.Offset != 1 || itest.EndOffset(t, cl, "orders", 0) != 2 {
		t.Fatalf("record at offset %d, end %d: want it appended once, at 1", r.Offset, itest.EndOffset(t, cl, "orders", 0))
	}
}

// A non-retriable error (INVALID_RECORD) on the next Produce: kgo gives up
// at once with that error, and nothing is appended.
func TestFaultKgoGivesUpOnNonRetriableError(t *testing.T) {
	c := mbt.Start(t, mbt.Topic("orders", 1))
	cl := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("orders"))
	warm(t, cl)
	f := c.Fault(mbt.FaultSpec{Kind: mbt.FaultError, APIKey: mbt.Key(kmsg.Produce),
		ErrorCode: kerr.InvalidRecord.Code, Count: 1})
	err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("o-1")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("produce error %v, want INVALID_RECORD", err)
	}
	if f.Fired() != 1 || itest.EndOffset(t, cl, "orders", 0) != 1 {
		t.Fatalf("fired %d, end %d: want 1 firing and nothing appended", f.Fired(), itest.EndOffset(t, cl, "orders", 0))
	}
	// The fault is spent: the next produce goes through.
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("o-2")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// kgo's own retry limit: a retriable error that never stops is given up
// on after RecordRetries, with the broker's error.
func TestFaultKgoRetryLimit(t *testing.T) {
	c := mbt.Start(t, mbt.Topic("orders", 1))
	cl := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("orders"), kgo.RecordRetries(2),
		kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }), kgo.MetadataMinAge(20*time.Millisecond))
	warm(t, cl)
	f := c.Fault(mbt.FaultSpec{Kind: mbt.FaultStorage, Topic: "orders"})
	err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("o-1")}).FirstErr()
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce error %v, want KAFKA_STORAGE_ERROR after the retries", err)
	}
	if n := f.Fired(); n < 3 {
		t.Fatalf("fault fired %d times: kgo should have tried 3 times", n)
	}
	if itest.EndOffset(t, cl, "orders", 0) != 1 {
		t.Fatal("a storage fault appended")
	}
}

// warm produces one record so metadata and the producer id are settled:
// the faults that follow meet Produce requests only.
func warm(t *testing.T, cl *kgo.Client) {
	t.Helper()
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// Determinism: a fault with Nth=3, Count=2 fires on exactly the 3rd and
// 4th matching requests, whatever else is sent between them (requests of
// other APIs, or naming other topics, do not count).
func TestFaultFiresOnTheNthMatchingRequest(t *testing.T) {
	c := mbt.Start(t, mbt.Topic("a", 1), mbt.Topic("b", 1))
	cl := itest.NewClient(t, c.Addr(), kgo.RecordRetries(0), kgo.DisableIdempotentWrite())
	ctx := context.Background()
	f := c.Fault(mbt.FaultSpec{Kind: mbt.FaultError, APIKey: mbt.Key(kmsg.Produce), Topic: "a",
		ErrorCode: kerr.InvalidRecord.Code, Nth: 3, Count: 2})
	var got []string
	for i := 1; i <= 6; i++ {
		// one produce to b (never matches) before each produce to a
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "b", Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce to b: %v", err)
		}
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: []byte(fmt.Sprint(i))}).FirstErr()
		got = append(got, fmt.Sprintf("%d:%v", i, err != nil))
	}
	want := "1:false 2:false 3:true 4:true 5:false 6:false"
	if strings.Join(got, " ") != want {
		t.Fatalf("failed requests %v, want %s", got, want)
	}
	if st := f.Status(); st.Matched != 4 || st.Fired != 2 || st.Active {
		t.Fatalf("status %+v: want matched 4 (it stopped matching once spent), fired 2, inactive", st)
	}
}

// A probabilistic fault with a seed fails the same requests on every run.
func TestFaultSeedRepeats(t *testing.T) {
	run := func() string {
		c := mbt.Start(t, mbt.Topic("a", 1))
		cl := itest.NewClient(t, c.Addr(), kgo.RecordRetries(0), kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic("a"))
		warm(t, cl)
		c.Fault(mbt.FaultSpec{Kind: mbt.FaultError, APIKey: mbt.Key(kmsg.Produce), ErrorCode: kerr.InvalidRecord.Code,
			Probability: 0.5, Seed: 42})
		var out []byte
		for i := 0; i < 24; i++ {
			if cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr() != nil {
				out = append(out, 'x')
			} else {
				out = append(out, '.')
			}
		}
		return string(out)
	}
	first, second := run(), run()
	if first != second || !strings.Contains(first, "x") || !strings.Contains(first, ".") {
		t.Fatalf("seed 42 gave %s then %s: want the same mix of failures twice", first, second)
	}
}

// A storage fault on one partition fails writes to it only; the other
// partitions of the same request are appended.
func TestFaultStorageOnePartition(t *testing.T) {
	c := mbt.Start(t, mbt.Topic("orders", 3))
	cl := itest.NewClient(t, c.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1),
		kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }), kgo.MetadataMinAge(20*time.Millisecond))
	c.Fault(mbt.FaultSpec{Kind: mbt.FaultStorage, Topic: "orders", Partition: mbt.PartitionOf(1)})
	res := cl.ProduceSync(context.Background(),
		&kgo.Record{Topic: "orders", Partition: 0, Value: []byte("p0")},
		&kgo.Record{Topic: "orders", Partition: 1, Value: []byte("p1")},
		&kgo.Record{Topic: "orders", Partition: 2, Value: []byte("p2")})
	for _, r := range res {
		want := error(nil)
		if r.Record.Partition == 1 {
			want = kerr.KafkaStorageError
		}
		if !errors.Is(r.Err, want) && r.Err != want {
			t.Errorf("partition %d: %v, want %v", r.Record.Partition, r.Err, want)
		}
	}
	for p, want := range []int64{1, 0, 1} {
		if got := itest.EndOffset(t, cl, "orders", int32(p)); got != want {
			t.Errorf("orders-%d end %d, want %d", p, got, want)
		}
	}
}

// A drop fault closes the connection instead of answering: kgo sees the
// connection die, reconnects and retries, and the produce succeeds once
// the fault is spent.
func TestFaultDropConnection(t *testing.T) {
	c := mbt.Start(t, mbt.Topic("orders", 1), mbt.HTTP())
	cl := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("orders"), kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }), kgo.MetadataMinAge(20*time.Millisecond))
	warm(t, cl)
	f := c.Fault(mbt.FaultSpec{Kind: mbt.FaultDrop, APIKey: mbt.Key(kmsg.Produce), Count: 2})
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("o-1")}).FirstErr(); err != nil {
		t.Fatalf("produce after two dropped connections: %v", err)
	}
	if f.Fired() != 2 {
		t.Fatalf("fired %d, want 2", f.Fired())
	}
	if m := itest.Metric(t, c.HTTPAddr(), `minibroker_connections_closed_on_error_total{reason="closed by handler"}`); m != "2" {
		t.Fatalf("connections closed by the fault: %q, want 2", m)
	}
}

// A latency fault delays the API's answers (a lower bound only: slower is
// always possible on a busy machine).
func TestFaultLatency(t *testing.T) {
	c := mbt.Start(t, mbt.Topic("orders", 1))
	cl := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("orders"))
	warm(t, cl)
	c.Fault(mbt.FaultSpec{Kind: mbt.FaultLatency, APIKey: mbt.Key(kmsg.Produce), LatencyMs: 300, Count: 1})
	start := time.Now()
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("o-1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("produce took %v with 300ms of injected latency", d)
	}
}

// A Fetch fault on one partition: kgo's consumer is answered
// NOT_LEADER_OR_FOLLOWER for that partition (refreshing its metadata and
// fetching it again), while the other partition, in the same requests, is
// served; every record arrives once the fault is spent.
func TestFaultFetchOnePartition(t *testing.T) {
	c := mbt.Start(t, mbt.Topic("orders", 2))
	prod := itest.NewClient(t, c.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 5; i++ {
			r := &kgo.Record{Topic: "orders", Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, i))}
			if err := prod.ProduceSync(context.Background(), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	f := c.Fault(mbt.FaultSpec{Kind: mbt.FaultError, APIKey: mbt.Key(kmsg.Fetch), Topic: "orders", Partition: mbt.PartitionOf(1),
		ErrorCode: kerr.NotLeaderForPartition.Code, Count: 3})
	recs := itest.ConsumeAll(t, c.Addr(), "orders", 10, kgo.MetadataMinAge(20*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }))
	seen := map[string]int{}
	for _, r := range recs {
		seen[string(r.Value)]++
	}
	if len(seen) != 10 || f.Fired() != 3 {
		t.Fatalf("got %d distinct records (%v), fault fired %d: want all 10 and 3 firings", len(seen), seen, f.Fired())
	}
}
