package perf_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/minibroker/minibroker/internal/perf"
	"github.com/minibroker/minibroker/minibrokertest"
)

// brokers under test: the real one and franz-go's fake, same workload.
func brokers(t *testing.T) map[string]string {
	mb := minibrokertest.Start(t)
	kf, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	return map[string]string{"minibroker": mb.Addr(), "kfake": kf.ListenAddrs()[0]}
}

func TestProduceConsumeJSON(t *testing.T) {
	for name, addr := range brokers(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var progress bytes.Buffer
			cfg := perf.Config{Brokers: []string{addr}, Topic: "perf", Partitions: 3, Records: 500, RecordSize: 64,
				Acks: "all", Idempotent: true, Compression: "lz4", Concurrency: 2,
				Progress: &progress, ProgressInterval: time.Millisecond}
			res, err := perf.Produce(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			m := roundTrip(t, res)
			for _, k := range []string{"records_per_sec", "mb_per_sec", "elapsed_s"} {
				if m[k].(float64) <= 0 {
					t.Errorf("produce %s = %v", k, m[k])
				}
			}
			if m["records"].(float64) != 500 || m["bytes"].(float64) != 500*64 || m["errors"].(float64) != 0 || m["partitions"].(float64) != 3 {
				t.Errorf("produce result %v", m)
			}
			// One record in 16 has its latency measured, counted from
			// each producer's first: 32 or 33 of the 500.
			lat := m["latency_ms"].(map[string]any)
			if c := lat["count"].(float64); c < 32 || c > 33 || lat["p50"].(float64) <= 0 || lat["p99"].(float64) < lat["p50"].(float64) ||
				lat["p99_9"].(float64) < lat["p99"].(float64) || lat["max"].(float64) < lat["p99_9"].(float64) {
				t.Errorf("produce latency %v", lat)
			}

			// The warm-up record of each producer is there too: 502 in all.
			cfg.Records, cfg.Concurrency = 502, 3
			res, err = perf.Consume(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			m = roundTrip(t, res)
			if m["records"].(float64) != 502 || m["mode"] != "consume" || m["concurrency"].(float64) != 3 {
				t.Errorf("consume result %v", m)
			}
			if lat := m["latency_ms"].(map[string]any); lat["count"].(float64) != 502 || lat["max"].(float64) <= 0 {
				t.Errorf("consume latency %v", lat)
			}
		})
	}
}

func TestDurationAndAcks(t *testing.T) {
	for name, addr := range brokers(t) {
		for _, acks := range []string{"0", "1"} {
			t.Run(name+"/acks="+acks, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				res, err := perf.Produce(ctx, perf.Config{Brokers: []string{addr}, Topic: "d" + acks, Partitions: 1,
					Duration: 200 * time.Millisecond, RecordSize: 10, Acks: acks, Concurrency: 1, MaxInFlight: 5})
				if err != nil {
					t.Fatal(err)
				}
				if res.Records == 0 || res.Errors != 0 || res.ElapsedSec < 0.2 {
					t.Errorf("%+v", res)
				}
			})
		}
	}
}

// TestRawBatches: pre-encoded batches land as records a kgo consumer
// reads back, and the raw consumer counts exactly those records from the
// batch headers, on both brokers.
func TestRawBatches(t *testing.T) {
	for name, addr := range brokers(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cfg := perf.Config{Brokers: []string{addr}, Topic: "raw", Partitions: 2, Records: 20000, RecordSize: 100,
				Acks: "all", Concurrency: 1, MaxInFlight: 2, RawBatches: true}
			res, err := perf.Produce(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			// Whole 1 MiB batches of 100 B records (9,000 to 10,000 each)
			// until 20,000 were claimed, plus the warm-up batch.
			if res.Errors != 0 || res.Records < 20000 || res.Records > 40000 || res.Bytes != res.Records*100 || !res.RawBatches {
				t.Fatalf("raw produce: %+v", res)
			}
			perBatch := res.Records / (res.Records / 9000)
			total := res.Records + perBatch
			if res.Records%perBatch != 0 {
				t.Fatalf("%d records are not whole batches of %d", res.Records, perBatch)
			}
			cfg.Records = total
			raw, err := perf.Consume(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg.RawBatches = false
			decoded, err := perf.Consume(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if raw.Records != total || decoded.Records != total || raw.Errors != 0 || decoded.Bytes != total*100 {
				t.Fatalf("%d records written; raw consume read %d, kgo %d (%d bytes)", total, raw.Records, decoded.Records, decoded.Bytes)
			}
			if raw.Latency.Count != uint64(total) {
				t.Errorf("raw consume latency counted %d records", raw.Latency.Count)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	base := perf.Config{Brokers: []string{"x"}, Topic: "t", Partitions: 1, Records: 1, Acks: "all", Concurrency: 1}
	for _, mod := range []func(*perf.Config){
		func(c *perf.Config) { c.Acks = "2" },
		func(c *perf.Config) { c.Compression = "brotli" },
		func(c *perf.Config) { c.Records = 0 },
		func(c *perf.Config) { c.Acks, c.Idempotent = "1", true },
		func(c *perf.Config) { c.Concurrency = 0 },
		func(c *perf.Config) { c.MaxInFlight = -1 },
		func(c *perf.Config) { c.MaxInFlight, c.Idempotent = 5, true },
		func(c *perf.Config) { c.RawBatches, c.Compression = true, "lz4" },
		func(c *perf.Config) { c.RawBatches, c.Acks = true, "0" },
	} {
		c := base
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	ok := base
	ok.MaxInFlight = 5
	if err := ok.Validate(); err != nil {
		t.Errorf("--max-in-flight 5 for a plain producer: %v", err)
	}
}

func roundTrip(t *testing.T, res *perf.Result) map[string]any {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// --throughput keeps to its schedule: 400 records at 2,000 records/s take
// at least the 0.19 s by which record 384 (the last one paced) is due.
// Unpaced, the same run takes a few ms against the in-process broker.
func TestProduceThroughput(t *testing.T) {
	mb := minibrokertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := perf.Config{Brokers: []string{mb.Addr()}, Topic: "paced", Partitions: 1, Records: 400, RecordSize: 10,
		Acks: "all", Concurrency: 1, Throughput: 2000}
	res, err := perf.Produce(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 400 || res.ElapsedSec < 0.19 || res.Throughput != 2000 {
		t.Errorf("paced run: %d records in %.3fs (limit %v)", res.Records, res.ElapsedSec, res.Throughput)
	}
	if err := (&perf.Config{Brokers: []string{"x"}, Topic: "t", Records: 1, Concurrency: 1, Partitions: 1, Acks: "all",
		Throughput: -1}).Validate(); err == nil {
		t.Error("negative --throughput accepted")
	}
}
