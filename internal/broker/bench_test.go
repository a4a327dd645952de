package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/protocol"
)

// benchBatch is a v2 batch of n records of size bytes each.
func benchBatch(n, size int) []byte {
	var recs []byte
	val := make([]byte, size)
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Value: val}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(n - 1), FirstTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(n), Records: recs}
	rb.Length = int32(61 - 12 + len(recs))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

func benchBroker(b *testing.B) *Broker {
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = b.TempDir(), "127.0.0.1:0", ""
	br, err := New(Options{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { br.Close(context.Background()) })
	if _, err := br.CreateTopic("t", 1, nil, [16]byte{}, false); err != nil {
		b.Fatal(err)
	}
	return br
}

// BenchmarkProduceHandler is a whole Produce request (one partition, one
// batch of n 100-byte records) through the broker's handler: validation,
// producer state, append, response. Allocations must not grow with n.
func BenchmarkProduceHandler(b *testing.B) {
	for _, n := range []int{1, 100, 5000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			br := benchBroker(b)
			raw := benchBatch(n, 100)
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = raw
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			r := &protocol.Request{Key: 0, Version: 9, Body: req}
			ctx := context.Background()
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				resp := br.Handle(ctx, r).(*kmsg.ProduceResponse)
				if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
					b.Fatalf("error %d", c)
				}
			}
		})
	}
}

// BenchmarkFetchHandler reads maxBytes from a warm partition through the
// Fetch handler (offset 0, no wait). The record bytes are read into a
// pooled buffer (protocol.Request.Buffer), released after each response as
// the server does; allocations must not grow with the bytes read.
func BenchmarkFetchHandler(b *testing.B) {
	for _, maxBytes := range []int32{16 << 10, 1 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("bytes=%d", maxBytes), func(b *testing.B) {
			br := benchBroker(b)
			t, _ := br.Topic("t")
			p := br.partitions(t)[0]
			raw := benchBatch(100, 100) // ~10 KiB batches
			for range (16 << 20) / len(raw) {
				if _, err := p.AppendAsLeader(raw); err != nil {
					b.Fatal(err)
				}
			}
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.MaxBytes, req.MinBytes, req.SessionEpoch, req.ReplicaID = 12, maxBytes, 1, -1, -1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = maxBytes, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			r := &protocol.Request{Key: 1, Version: 12, Body: req}
			ctx := context.Background()
			var n int
			b.ReportAllocs()
			for b.Loop() {
				resp := br.Handle(ctx, r).(*kmsg.FetchResponse)
				n = len(resp.Topics[0].Partitions[0].RecordBatches)
				r.Release() // as the server does once the response is encoded
			}
			b.SetBytes(int64(n))
		})
	}
}

// BenchmarkProduceHandlerParallel runs whole Produce requests (one batch of
// 100 records of 100 bytes) from GOMAXPROCS goroutines at once, each
// through the broker's handler as one connection's processor would. With
// "own partition" every goroutine writes its own partition, with "shared
// partition" all write partition 0. Run with -cpu 1,2: own-partition
// throughput should scale with the CPUs (no lock shared across
// partitions on the produce path), while a shared partition serialises on
// its append lock, as Kafka's Partition does.
func BenchmarkProduceHandlerParallel(b *testing.B) {
	for _, shared := range []bool{false, true} {
		name := "own partition"
		if shared {
			name = "shared partition"
		}
		b.Run(name, func(b *testing.B) {
			br := benchBroker(b)
			if _, err := br.CreateTopic("p", 64, nil, [16]byte{}, false); err != nil {
				b.Fatal(err)
			}
			raw := benchBatch(100, 100)
			var next atomic.Int32
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				part := int32(0)
				if !shared {
					part = next.Add(1) - 1
				}
				req := kmsg.NewPtrProduceRequest()
				req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = "p"
				rp := kmsg.NewProduceRequestTopicPartition()
				// The leader writes offsets into the batch in place: each
				// goroutine owns its copy, as each connection owns its frame.
				rp.Partition, rp.Records = part, append([]byte(nil), raw...)
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				r := &protocol.Request{Key: 0, Version: 9, Body: req}
				ctx := context.Background()
				for pb.Next() {
					resp := br.Handle(ctx, r).(*kmsg.ProduceResponse)
					if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
						b.Errorf("error %d", c)
						return
					}
				}
			})
		})
	}
}

// BenchmarkCloseOpen1000Partitions measures a large broker's restart on real files: a
// broker holding one topic of 1,000 partitions with one record each is
// closed (close-ms), opened again after that clean shutdown (open-ms),
// given one more record per partition, killed, and opened again, which
// recovers every log (recover-ms). The other metrics are per iteration;
// ns/op includes the setup. Run with -benchtime=1x -count=N and compare
// medians: the numbers are dominated by fsync and the disk is shared.
// threads is num.recovery.threads.per.data.dir (2 is the default; 1 is
// how minibroker worked before it).
func BenchmarkCloseOpen1000Partitions(b *testing.B) {
	for _, threads := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			benchCloseOpen(b, 1000, fmt.Sprintf("num.recovery.threads.per.data.dir=%d", threads))
		})
	}
}

func benchCloseOpen(b *testing.B, partitions int32, sets ...string) {
	cfg := config.Default()
	cfg.Listen, cfg.HTTPListen = "127.0.0.1:0", ""
	for _, kv := range sets {
		if err := cfg.SetPair(kv); err != nil {
			b.Fatal(err)
		}
	}
	open := func() (*Broker, time.Duration) {
		start := time.Now()
		br, err := New(Options{Config: cfg})
		if err != nil {
			b.Fatal(err)
		}
		return br, time.Since(start)
	}
	closeTimed := func(br *Broker) time.Duration {
		start := time.Now()
		if err := br.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	appendOne := func(br *Broker) {
		t, _ := br.Topic("t")
		for _, p := range br.partitions(t) {
			if _, err := p.AppendAsLeader(benchBatch(1, 100)); err != nil {
				b.Fatal(err)
			}
		}
	}
	var closing, opening, recovering time.Duration
	for b.Loop() {
		cfg.DataDir = b.TempDir()
		br, _ := open()
		if _, err := br.CreateTopic("t", partitions, nil, [16]byte{}, false); err != nil {
			b.Fatal(err)
		}
		appendOne(br)
		closing += closeTimed(br)
		br, took := open()
		opening += took
		appendOne(br)
		br.Kill()
		br, took = open()
		recovering += took
		if err := br.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
	b.ReportMetric(ms(closing), "close-ms")
	b.ReportMetric(ms(opening), "open-ms")
	b.ReportMetric(ms(recovering), "recover-ms")
}

// BenchmarkCreateTopic1000Partitions times CreateTopic of one topic of
// 1,000 partitions in a running broker and reports the file descriptors
// each new partition holds (/proc/self/fd).
func BenchmarkCreateTopic1000Partitions(b *testing.B) {
	cfg := config.Default()
	cfg.Listen, cfg.HTTPListen = "127.0.0.1:0", ""
	for b.Loop() {
		cfg.DataDir = b.TempDir()
		br, err := New(Options{Config: cfg})
		if err != nil {
			b.Fatal(err)
		}
		fds := openFDs()
		start := time.Now()
		if _, err := br.CreateTopic("t", 1000, nil, [16]byte{}, false); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "create-ms")
		b.ReportMetric(float64(openFDs()-fds)/1000, "fds/partition")
		if err := br.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// openFDs counts this process's open file descriptors (-1 where
// /proc/self/fd is unavailable).
func openFDs() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries)
}
