// Helpers shared by the producer and transaction tests: raw producers
// speaking InitProducerId and Produce by hand, transactional clients, and
// raw ListOffsets requests. The rule each test proves is mapped in doc.go.

package itest

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListOffsetsRequest asks for the offset at ts (or a negative spec: -1
// latest, -2 earliest, -3 max timestamp, -5 earliest local) of
// partition 0 of topic.
func ListOffsetsRequest(topic string, ts int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// ProducerBatch encodes an idempotent v2 batch of n records.
func ProducerBatch(pid int64, epoch int16, seq int32, n int) []byte {
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
	binary.BigEndian.PutUint32(raw[17:], Crc32c(raw[21:]))
	return raw
}

type RawProducer struct {
	Rc   *RawConn
	Corr int32
}

func (p *RawProducer) InitProducerID(t *testing.T) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.ProducerID, req.ProducerEpoch = -1, -1
	p.Corr++
	p.Rc.Write(RequestFrame(req, p.Corr))
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.Version = 4
	if err := resp.ReadFrom(p.Rc.ReadResponse(p.Corr, true)); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v code %d", err, resp.ErrorCode)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// Produce sends one batch with Produce v9 and returns (error code, base offset).
func (p *RawProducer) Produce(t *testing.T, topic string, records []byte) (int16, int64) {
	t.Helper()
	sp := p.ProduceResponse(t, topic, records)
	return sp.ErrorCode, sp.BaseOffset
}

// ProduceResponse sends one batch for partition 0 with Produce v9 and
// returns the partition's answer.
func (p *RawProducer) ProduceResponse(t *testing.T, topic string, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	return p.ProduceVersion(t, 9, topic, records)
}

// ProduceVersion is produceResponse with Produce version v.
func (p *RawProducer) ProduceVersion(t *testing.T, v int16, topic string, records []byte) kmsg.ProduceResponseTopicPartition {
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
	p.Corr++
	p.Rc.Write(RequestFrame(req, p.Corr))
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = v
	if err := resp.ReadFrom(p.Rc.ReadResponse(p.Corr, v >= 9)); err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

func TxnClient(t *testing.T, addr, txnID, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return NewClient(t, addr, append([]kgo.Opt{kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic),
		kgo.TransactionTimeout(30 * time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond })},
		opts...)...)
}

// ProduceTxn runs one transaction of values and ends it with commit.
func ProduceTxn(t *testing.T, cl *kgo.Client, commit bool, values ...string) {
	t.Helper()
	ctx := TxnCtx(t)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit=%v): %v", commit, err)
	}
}

// readValues reads a single-partition topic from the start up to its end
// (read_uncommitted: the high watermark; read_committed: the last stable
// offset) and returns the values, in order.
func ReadTxnValues(t *testing.T, addr, topic string, committed bool) []string {
	t.Helper()
	ctx := TxnCtx(t)
	adm := kadm.NewClient(NewClient(t, addr))
	var ends kadm.ListedOffsets
	var err error
	if committed {
		ends, err = adm.ListCommittedOffsets(ctx, topic)
	} else {
		ends, err = adm.ListEndOffsets(ctx, topic)
	}
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	opts := []kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond)}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl := NewClient(t, addr, opts...)
	defer cl.Close()
	// Markers and aborted records move the consumer without records, so
	// the read ends at the end offset or after a second with nothing new.
	var out []string
	pos := int64(0)
	for pos < end.Offset {
		poll, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(poll)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("read %s to %d: at %d: %v", topic, end.Offset, pos, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("fetch: %v", err)
			}
		})
		if len(fs.Records()) == 0 {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, string(r.Value))
			pos = r.Offset + 1
		})
	}
	return out
}

func TxnCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
