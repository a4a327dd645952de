package integration

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// producerBatch encodes an idempotent v2 batch of n records.
func producerBatch(pid int64, epoch int16, seq int32, n int) []byte {
	var recs []byte
	for i := 0; i < n; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte{byte('a' + i)}}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	now := time.Now().UnixMilli() // producer state expires by batch timestamps, as in Kafka
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(n - 1), FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(n), Records: recs}
	rb.Length = int32(49 + len(recs))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32c(raw[21:]))
	return raw
}

type rawProducer struct {
	rc   *rawConn
	corr int32
}

func (p *rawProducer) initProducerID(t *testing.T) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.ProducerID, req.ProducerEpoch = -1, -1
	p.corr++
	p.rc.write(requestFrame(req, p.corr))
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.Version = 4
	if err := resp.ReadFrom(p.rc.readResponse(p.corr, true)); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v code %d", err, resp.ErrorCode)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// produce sends one batch with Produce v9 and returns (error code, base offset).
func (p *rawProducer) produce(t *testing.T, topic string, records []byte) (int16, int64) {
	t.Helper()
	sp := p.produceResponse(t, topic, records)
	return sp.ErrorCode, sp.BaseOffset
}

// produceResponse sends one batch for partition 0 with Produce v9 and
// returns the partition's answer.
func (p *rawProducer) produceResponse(t *testing.T, topic string, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	return p.produceVersion(t, 9, topic, records)
}

// produceVersion is produceResponse with Produce version v.
func (p *rawProducer) produceVersion(t *testing.T, v int16, topic string, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = v
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p.corr++
	p.rc.write(requestFrame(req, p.corr))
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = v
	if err := resp.ReadFrom(p.rc.readResponse(p.corr, v >= 9)); err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// TestProducerStateThroughTheBroker drives the producer-state rules with
// raw Produce requests: a retried batch is answered with its original
// offset and appended once, a sequence gap answers
// OUT_OF_ORDER_SEQUENCE_NUMBER (45), an older epoch INVALID_PRODUCER_EPOCH
// (47), and the dedup state survives a clean restart and a crash.
func TestProducerStateThroughTheBroker(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("psm", 1))
	p := &rawProducer{rc: dialRaw(t, c.Addr())}
	pid, epoch := p.initProducerID(t)

	expect := func(stage string, records []byte, code int16, base int64) {
		t.Helper()
		gotCode, gotBase := p.produce(t, "psm", records)
		if gotCode != code || (code == 0 && gotBase != base) {
			t.Fatalf("%s: code %d base %d, want code %d base %d", stage, gotCode, gotBase, code, base)
		}
	}
	expect("first", producerBatch(pid, epoch, 0, 3), 0, 0)
	expect("second", producerBatch(pid, epoch, 3, 2), 0, 3)
	expect("retry of first", producerBatch(pid, epoch, 0, 3), 0, 0)
	expect("retry of second", producerBatch(pid, epoch, 3, 2), 0, 3)
	expect("gap", producerBatch(pid, epoch, 9, 1), kerr.OutOfOrderSequenceNumber.Code, -1)
	expect("bumped epoch", producerBatch(pid, epoch+1, 0, 1), 0, 5)
	expect("fenced epoch", producerBatch(pid, epoch, 5, 1), kerr.InvalidProducerEpoch.Code, -1)

	for _, restart := range []func(){c.Restart, func() { c.Kill(); c.Revive() }} {
		restart()
		p = &rawProducer{rc: dialRaw(t, c.Addr())}
		expect("retry after restart", producerBatch(pid, epoch+1, 0, 1), 0, 5)
		expect("fenced after restart", producerBatch(pid, epoch, 5, 1), kerr.InvalidProducerEpoch.Code, -1)
	}
	expect("continues", producerBatch(pid, epoch+1, 1, 1), 0, 6)
	if end := logEnd(c, "psm", 0); end != 7 {
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
	p := &rawProducer{rc: dialRaw(t, c.Addr())}
	pid, epoch := p.initProducerID(t)
	if code, base := p.produce(t, "psm", producerBatch(pid, epoch, 0, 2)); code != 0 || base != 0 {
		t.Fatalf("first: %d %d", code, base)
	}
	if code, base := p.produce(t, "psm", producerBatch(pid, epoch, 0, 2)); code != 0 || base != 0 {
		t.Fatalf("retry while known: %d %d", code, base)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		part, _ := c.Broker().Partition("psm", 0)
		time.Sleep(100 * time.Millisecond)
		if _, base := p.produce(t, "psm", producerBatch(pid, epoch, 0, 2)); base != 0 {
			break // expired: appended as an unknown producer's batch
		}
		if time.Now().After(deadline) {
			t.Fatalf("producer never expired (log end %d)", part.Offsets().LogEnd)
		}
	}
}
