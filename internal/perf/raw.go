package perf

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/minibroker/minibroker/internal/batch"
)

// Raw batches (--raw-batches) take the client out of the measurement. A
// producer builds, encodes and checksums every record, and a consumer
// decodes every record: for 100 B records that is most of a core on
// this machine's VM, so no broker, not even one that stores nothing, can
// be told apart from its peer through a producer or a consumer. In raw
// mode the load tool encodes one batch of records once and sends it in
// every Produce request, and it reads Fetch responses by their batch
// headers without decoding records: per record the client does nothing,
// and the broker (which still checks every record, as Kafka's does) is
// the bound. No Kafka tool works this way; these rows measure brokers,
// not what an application sees.

// rawBatchBytes is the size of the batch a raw producer sends, kgo's and
// this tool's producer batch limit (ProducerBatchMaxBytes).
const rawBatchBytes = 1 << 20

// rawClient is a kgo client for raw requests, capped at Kafka 4.0's
// versions: Produce v13 names topics by id only.
func rawClient(cfg Config) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.MaxVersions(kversion.V4_0_0()))
}

// rawBatch encodes one uncompressed batch of records of size bytes,
// about rawBatchBytes in all, with a good CRC; the broker assigns its
// offsets on append.
func rawBatch(size int) (raw []byte, records int32) {
	value := make([]byte, size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var body []byte
	for len(body)+size+batch.HeaderSize+16 <= rawBatchBytes || records == 0 {
		r := kmsg.Record{OffsetDelta: records, Value: value}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // measured with Length 0, one byte
		body = r.AppendTo(body)
		records++
	}
	now := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: records - 1, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: records, Records: body}
	rb.Length = int32(batch.HeaderSize - batch.LogOverhead + len(body))
	raw = rb.AppendTo(nil)
	batch.SetCRC(raw)
	return raw, records
}

// produceRaw is Produce with --raw-batches: max(MaxInFlight, 1) requests
// in flight, each one batch for the next partition in turn; the latency
// is each request's ack, counted once per record it carried.
func produceRaw(ctx context.Context, cfg Config, parts int32) (*Result, error) {
	cl, err := rawClient(cfg)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	raw, perBatch := rawBatch(cfg.RecordSize)
	acks := int16(-1)
	if cfg.Acks == "1" {
		acks = 1
	}
	request := func(p int32) *kmsg.ProduceRequest {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = acks
		req.TimeoutMillis = 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = cfg.Topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, raw
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	// Warm-up, off the clock: metadata, the connection, the topic's
	// first append.
	if _, err := request(0).RequestWith(ctx, cl); err != nil {
		return nil, fmt.Errorf("warm-up produce: %w", err)
	}

	var (
		h         histogram
		sent      atomic.Int64
		sentBytes atomic.Int64
		e         errorCount
		claimed   atomic.Int64
		next      atomic.Int32
	)
	runCtx, cancel := runContext(ctx, cfg)
	defer cancel()
	start := time.Now()
	stopProgress := startProgress(cfg, "acked", &sent, &sentBytes, &h)
	var wg sync.WaitGroup
	for range max(cfg.MaxInFlight, 1) {
		wg.Go(func() {
			for runCtx.Err() == nil {
				if cfg.Records > 0 && claimed.Add(int64(perBatch))-int64(perBatch) >= cfg.Records {
					return
				}
				t0 := time.Now()
				resp, err := request(next.Add(1)%parts).RequestWith(runCtx, cl)
				if err == nil {
					err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
				}
				if err != nil {
					if runCtx.Err() == nil {
						e.add(err)
					}
					continue
				}
				h.RecordN(time.Since(t0), uint64(perBatch))
				sent.Add(int64(perBatch))
				sentBytes.Add(int64(perBatch) * int64(cfg.RecordSize))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()
	res := &Result{Mode: "produce", Topic: cfg.Topic, Partitions: parts, RecordSize: cfg.RecordSize, Acks: cfg.Acks,
		Concurrency: cfg.Concurrency, RawBatches: true, Records: sent.Load(), Bytes: sentBytes.Load()}
	e.into(res)
	res.finish(elapsed, &h)
	return res, ctx.Err()
}

// consumeRaw is Consume with --raw-batches: one Fetch at a time for all
// partitions from offset 0, records counted from batch headers, never
// decoded. The latency is end to end from each batch's max timestamp,
// counted once per record in it.
func consumeRaw(ctx context.Context, cfg Config, parts int32) (*Result, error) {
	cl, err := rawClient(cfg)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(ctx, cfg.Topic)
	if err != nil {
		return nil, err
	}
	id := td[cfg.Topic].ID
	fetchSize := cfg.FetchSize
	if fetchSize == 0 {
		fetchSize = DefaultFetchSize
	}
	offsets := make([]int64, parts)

	var (
		h     histogram
		read  atomic.Int64
		bytes atomic.Int64
		e     errorCount
	)
	runCtx, cancel := runContext(ctx, cfg)
	defer cancel()
	start := time.Now()
	stopProgress := startProgress(cfg, "read", &read, &bytes, &h)
	for runCtx.Err() == nil && (cfg.Records <= 0 || read.Load() < cfg.Records) {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 500, 1, 50<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = cfg.Topic, id
		for p, off := range offsets {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(p), off, fetchSize
			rp.LogStartOffset, rp.CurrentLeaderEpoch = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(runCtx, cl)
		if err != nil {
			if runCtx.Err() == nil {
				e.add(err)
			}
			continue
		}
		now := time.Now()
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					e.add(err)
					continue
				}
				var n int64
				offsets[p.Partition], n = countBatches(p.RecordBatches, offsets[p.Partition], now, &h)
				read.Add(n)
				bytes.Add(n * int64(cfg.RecordSize))
			}
		}
	}
	elapsed := time.Since(start)
	stopProgress()
	res := &Result{Mode: "consume", Topic: cfg.Topic, Partitions: parts, RecordSize: cfg.RecordSize,
		Concurrency: 1, RawBatches: true, Records: read.Load(), Bytes: bytes.Load()}
	e.into(res)
	res.finish(elapsed, &h)
	return res, ctx.Err()
}

// countBatches walks the batches of a fetched record set by their
// headers from offset from: it returns the next offset to fetch and the
// data records at or past from (offsets are dense in a topic only this
// tool wrote). A batch cut short at the end of the set is left for the
// next fetch.
func countBatches(set []byte, from int64, now time.Time, h *histogram) (next, records int64) {
	next = from
	for len(set) >= batch.HeaderSize {
		hd, err := batch.ParseHeader(set)
		if err != nil || hd.Size() > len(set) {
			break
		}
		if last := hd.LastOffset(); last >= next {
			if !hd.IsControl() {
				n := last + 1 - max(hd.BaseOffset, next)
				records += n
				h.RecordN(now.Sub(time.UnixMilli(hd.MaxTimestamp)), uint64(n))
			}
			next = last + 1
		}
		set = set[hd.Size():]
	}
	return next, records
}

// runContext ends at cfg.Duration, if set.
func runContext(ctx context.Context, cfg Config) (context.Context, context.CancelFunc) {
	if cfg.Duration > 0 {
		return context.WithTimeout(ctx, cfg.Duration)
	}
	return context.WithCancel(ctx)
}

// errorCount counts a run's errors and keeps the first.
type errorCount struct {
	n     atomic.Int64
	first atomic.Pointer[string]
}

func (e *errorCount) add(err error) {
	if e.n.Add(1) == 1 {
		s := err.Error()
		e.first.Store(&s)
	}
}

func (e *errorCount) into(res *Result) {
	res.Errors = e.n.Load()
	if p := e.first.Load(); p != nil {
		res.FirstError = *p
	}
}
