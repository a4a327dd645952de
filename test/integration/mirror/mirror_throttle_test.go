package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorThrottle: mirror.replication.throttled.rate bounds what a
// mirror fetches, all its partitions together, and a change applies while
// it runs. A backlog of 10 KiB records on 4 partitions is mirrored at
// 1 MB/s for 10 s, then at 3 MB/s for 5 s (each within ±20 %); with the
// throttle off (the negative control) the rest arrives at well above the
// last rate.
func TestMirrorThrottle(t *testing.T) {
	const recSize = 10 << 10
	a := minibrokertest.Start(t, minibrokertest.Topic("t", 4))
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.Addr()), kgo.DefaultProduceTopic("t"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	val := make([]byte, recSize)
	for i := range val {
		val[i] = byte(i * 31)
	}
	const n = 5000 // about 51 MB
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: val}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	d := minibrokertest.Start(t)
	m := d.Mirror("m", a.Addr())
	setRate := func(bytesPerSec int64) { // as `mirror alter --mirror-config`
		t.Helper()
		if err := d.Broker().Mirrors().AlterSettings("m", map[string]string{"mirror.replication.throttled.rate": fmt.Sprint(bytesPerSec)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	dcl, err := kgo.NewClient(kgo.SeedBrokers(d.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer dcl.Close()
	adm := kadm.NewClient(dcl)
	// mirrored is the record bytes on the destination (batch overhead is
	// under 1 % of 10 KiB records).
	mirrored := func() float64 {
		t.Helper()
		for i := 0; ; i++ {
			lo, err := adm.ListEndOffsets(context.Background(), "t")
			if err == nil && lo.Error() == nil {
				var sum int64
				lo.Each(func(o kadm.ListedOffset) { sum += o.Offset })
				return float64(sum * recSize)
			}
			if i > 100 {
				t.Fatalf("list end offsets: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// rateOver measures the mirror's bytes/s over d, from its first
	// progress.
	rateOver := func(d time.Duration) float64 {
		t.Helper()
		b0, t0 := mirrored(), time.Now()
		time.Sleep(d)
		return (mirrored() - b0) / time.Since(t0).Seconds()
	}
	within := func(what string, got, want float64) {
		t.Helper()
		t.Logf("%s: %.0f B/s (set %.0f)", what, got, want)
		if got < want*0.8 || got > want*1.2 {
			t.Errorf("%s: %.0f B/s, want %.0f ± 20 %%", what, got, want)
		}
	}

	setRate(1_000_000)
	m.Start("t")
	deadline := time.Now().Add(time.Minute)
	for mirrored() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("nothing mirrored in a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	within("1 MB/s over 10 s", rateOver(10*time.Second), 1_000_000)

	setRate(3_000_000) // while running
	within("changed to 3 MB/s, over 5 s", rateOver(5*time.Second), 3_000_000)

	// Negative control: the throttle off, the rest of the backlog comes at
	// whatever the machine gives, well above the last rate.
	left := float64(n*recSize) - mirrored()
	if left < 10e6 {
		t.Fatalf("only %.0f bytes left for the unthrottled run: the throttle let through too much", left)
	}
	setRate(0)
	start := time.Now()
	m.WaitCaughtUp(2 * time.Minute)
	free := left / time.Since(start).Seconds()
	t.Logf("throttle off: %.0f bytes in %s, %.0f B/s", left, time.Since(start), free)
	if free < 2*3_000_000 {
		t.Errorf("throttle off: %.0f B/s, want well above the 3 MB/s throttle", free)
	}
	if got := mirrored(); got != float64(n*recSize) {
		t.Errorf("mirrored %.0f record bytes, want %d", got, n*recSize)
	}
}
