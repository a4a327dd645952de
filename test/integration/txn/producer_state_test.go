package txn

import (
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestProducerStateThroughTheBroker drives the producer-state rules with
// raw Produce requests: a retried batch is answered with its original
// offset and appended once, a sequence gap answers
// OUT_OF_ORDER_SEQUENCE_NUMBER (45), an older epoch INVALID_PRODUCER_EPOCH
// (47), and the dedup state survives a clean restart and a crash.
func TestProducerStateThroughTheBroker(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("psm", 1))
	p := &itest.RawProducer{Rc: itest.DialRaw(t, c.Addr())}
	pid, epoch := p.InitProducerID(t)

	expect := func(stage string, records []byte, code int16, base int64) {
		t.Helper()
		gotCode, gotBase := p.Produce(t, "psm", records)
		if gotCode != code || (code == 0 && gotBase != base) {
			t.Fatalf("%s: code %d base %d, want code %d base %d", stage, gotCode, gotBase, code, base)
		}
	}
	expect("first", itest.ProducerBatch(pid, epoch, 0, 3), 0, 0)
	expect("second", itest.ProducerBatch(pid, epoch, 3, 2), 0, 3)
	expect("retry of first", itest.ProducerBatch(pid, epoch, 0, 3), 0, 0)
	expect("retry of second", itest.ProducerBatch(pid, epoch, 3, 2), 0, 3)
	expect("gap", itest.ProducerBatch(pid, epoch, 9, 1), kerr.OutOfOrderSequenceNumber.Code, -1)
	expect("bumped epoch", itest.ProducerBatch(pid, epoch+1, 0, 1), 0, 5)
	expect("fenced epoch", itest.ProducerBatch(pid, epoch, 5, 1), kerr.InvalidProducerEpoch.Code, -1)

	for _, restart := range []func(){c.Restart, func() { c.Kill(); c.Revive() }} {
		restart()
		p = &itest.RawProducer{Rc: itest.DialRaw(t, c.Addr())}
		expect("retry after restart", itest.ProducerBatch(pid, epoch+1, 0, 1), 0, 5)
		expect("fenced after restart", itest.ProducerBatch(pid, epoch, 5, 1), kerr.InvalidProducerEpoch.Code, -1)
	}
	expect("continues", itest.ProducerBatch(pid, epoch+1, 1, 1), 0, 6)
	if end := itest.LogEnd(c, "psm", 0); end != 7 {
		t.Fatalf("log end %d, want 7: retries must not append", end)
	}
}

// TestIdleProducersExpire: after producer.id.expiration.ms without a
// write, the broker forgets a producer (Kafka's periodic expiration), so
// the same batch is no longer recognised as a retry.
func TestIdleProducersExpire(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("psm", 1),
		minibrokertest.Set("producer.id.expiration.ms", "200"),
		minibrokertest.Set("producer.id.expiration.check.interval.ms", "50"))
	p := &itest.RawProducer{Rc: itest.DialRaw(t, c.Addr())}
	pid, epoch := p.InitProducerID(t)
	if code, base := p.Produce(t, "psm", itest.ProducerBatch(pid, epoch, 0, 2)); code != 0 || base != 0 {
		t.Fatalf("first: %d %d", code, base)
	}
	if code, base := p.Produce(t, "psm", itest.ProducerBatch(pid, epoch, 0, 2)); code != 0 || base != 0 {
		t.Fatalf("retry while known: %d %d", code, base)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		part, _ := c.Broker().Partition("psm", 0)
		time.Sleep(100 * time.Millisecond)
		if _, base := p.Produce(t, "psm", itest.ProducerBatch(pid, epoch, 0, 2)); base != 0 {
			break // expired: appended as an unknown producer's batch
		}
		if time.Now().After(deadline) {
			t.Fatalf("producer never expired (log end %d)", part.Offsets().LogEnd)
		}
	}
}
