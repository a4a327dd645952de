// Package perf is the load generator behind `minibroker perf produce` and
// `minibroker perf consume`, in the spirit of Kafka's
// kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh. It talks to
// any Kafka-protocol broker through kgo, so the same workload can be run
// against minibroker and a peer.
package perf

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Config is one produce or consume run.
type Config struct {
	Brokers     []string
	Topic       string
	Partitions  int32 // for creating a missing topic
	Records     int64 // stop after this many records (0: use Duration)
	Duration    time.Duration
	RecordSize  int
	Acks        string // "0", "1" or "all"
	Idempotent  bool
	Compression string // none, gzip, snappy, lz4, zstd
	Linger      time.Duration
	// MaxInFlight is the produce requests a non-idempotent producer keeps
	// in flight per broker (the Java producer's
	// max.in.flight.requests.per.connection, default 5 there); 0 is kgo's
	// default, 1. An idempotent kgo producer always allows 5.
	MaxInFlight int
	Concurrency int   // producer or consumer clients
	FetchSize   int32 // consume: bytes per partition per fetch; 0 means DefaultFetchSize
	// RawBatches sends one pre-encoded batch per Produce request, or
	// counts fetched records by batch headers, instead of producing or
	// consuming records (see raw.go).
	RawBatches bool
	// Throughput caps the records sent per second over all producer
	// clients (kafka-producer-perf-test.sh's --throughput); 0: as fast as
	// the client goes. Sends keep to a fixed schedule from the start, so a
	// stall is followed by a catch-up burst, and the ack latency at a given
	// rate below the maximum shows the broker's tail, not the client's
	// queue.
	Throughput float64

	// Progress, when set, receives a line every ProgressInterval.
	Progress         io.Writer
	ProgressInterval time.Duration
}

// DefaultFetchSize is kafka-consumer-perf-test.sh's --fetch-size default
// (1 MiB), which it sets as the consumer's max.partition.fetch.bytes; it is
// also that setting's default in the Java consumer and in kgo.
const DefaultFetchSize = 1 << 20

// Validate checks the flags' combinations.
func (c *Config) Validate() error {
	switch {
	case len(c.Brokers) == 0:
		return errors.New("no --brokers")
	case c.Topic == "":
		return errors.New("no --topic")
	case c.Records <= 0 && c.Duration <= 0:
		return errors.New("need --records or --duration")
	case c.RecordSize < 0:
		return errors.New("negative --record-size")
	case c.Concurrency < 1:
		return errors.New("--concurrency must be ≥ 1")
	case c.Partitions < 1:
		return errors.New("--partitions must be ≥ 1")
	case c.FetchSize < 0:
		return errors.New("negative --fetch-size")
	case c.Throughput < 0:
		return errors.New("negative --throughput")
	case c.Throughput > 0 && c.RawBatches:
		return errors.New("--throughput is for record producers, not --raw-batches")
	case c.MaxInFlight < 0:
		return errors.New("negative --max-in-flight")
	case c.MaxInFlight > 1 && c.Idempotent:
		return errors.New("--max-in-flight is for a non-idempotent producer (kgo keeps 5 in flight for an idempotent one)")
	}
	if _, err := c.acks(); err != nil {
		return err
	}
	if _, err := c.codec(); err != nil {
		return err
	}
	if c.RawBatches && (c.Idempotent || c.Acks == "0" || (c.Compression != "" && c.Compression != "none")) {
		return errors.New("--raw-batches sends plain uncompressed batches with --acks 1 or all")
	}
	if c.Idempotent && c.Acks != "all" && c.Acks != "-1" {
		return errors.New("--idempotent needs --acks all")
	}
	return nil
}

func (c *Config) acks() (kgo.Acks, error) {
	switch c.Acks {
	case "0":
		return kgo.NoAck(), nil
	case "1":
		return kgo.LeaderAck(), nil
	case "all", "-1":
		return kgo.AllISRAcks(), nil
	}
	return kgo.Acks{}, fmt.Errorf("--acks %q: want 0, 1 or all", c.Acks)
}

func (c *Config) codec() (kgo.CompressionCodec, error) {
	switch strings.ToLower(c.Compression) {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", c.Compression)
}

func (c *Config) producerOpts() []kgo.Opt {
	acks, _ := c.acks()
	codec, _ := c.codec()
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.DefaultProduceTopic(c.Topic),
		kgo.RequiredAcks(acks),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(c.Linger),
		kgo.ProducerBatchMaxBytes(1 << 20),
		kgo.MaxBufferedBytes(64 << 20),
		kgo.RecordRetries(10),
	}
	if !c.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
		if c.MaxInFlight > 0 {
			opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(c.MaxInFlight))
		}
	}
	return opts
}

// Result is a run's outcome; it is what --json prints.
type Result struct {
	Mode          string  `json:"mode"` // produce or consume
	Topic         string  `json:"topic"`
	Partitions    int32   `json:"partitions"`
	RecordSize    int     `json:"record_size"`
	Acks          string  `json:"acks,omitempty"`
	Idempotent    bool    `json:"idempotent,omitempty"`
	Compression   string  `json:"compression,omitempty"`
	LingerMs      float64 `json:"linger_ms,omitempty"`
	Concurrency   int     `json:"concurrency"`
	RawBatches    bool    `json:"raw_batches,omitempty"`
	Throughput    float64 `json:"throughput_limit,omitempty"` // records/s asked for (--throughput)
	Records       int64   `json:"records"`
	Bytes         int64   `json:"bytes"` // record values only, as Kafka's tools count
	Errors        int64   `json:"errors"`
	FirstError    string  `json:"first_error,omitempty"`
	ElapsedSec    float64 `json:"elapsed_s"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"` // MB = 2^20 bytes, as Kafka's tools
	// Latency is the produce acknowledgement latency (produce) or the
	// end-to-end latency from the record timestamp (consume).
	Latency Latency `json:"latency_ms"`
}

func (r *Result) finish(elapsed time.Duration, h *histogram) {
	r.ElapsedSec = elapsed.Seconds()
	if s := elapsed.Seconds(); s > 0 {
		r.RecordsPerSec = float64(r.Records) / s
		r.MBPerSec = float64(r.Bytes) / (1 << 20) / s
	}
	r.Latency = h.Summary()
}

// String is the human-readable summary line.
func (r *Result) String() string {
	s := fmt.Sprintf("%d records %s in %.2fs: %.0f records/s, %.2f MB/s; latency ms p50 %.2f p99 %.2f p99.9 %.2f max %.2f",
		r.Records, map[string]string{"produce": "sent", "consume": "read"}[r.Mode], r.ElapsedSec, r.RecordsPerSec, r.MBPerSec,
		r.Latency.P50, r.Latency.P99, r.Latency.P999, r.Latency.Max)
	if r.Errors > 0 {
		s += fmt.Sprintf("; %d errors (first: %s)", r.Errors, r.FirstError)
	}
	return s
}
