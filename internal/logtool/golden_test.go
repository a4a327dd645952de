package logtool

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// goldenTS is the first record timestamp of the golden partition: fixed
// (so data batches and their CRCs are the same on every run) and far in
// the future, above the broker-time timestamps of markers and the barrier,
// so those never become a time-index entry.
const goldenTS = 4_102_444_800_000 // 2100-01-01

// buildGoldenPartition produces, through real brokers and kgo clients, a
// partition directory holding plain data (keys, headers, a null key, a
// binary value), one batch per compression codec, a committed and an
// aborted transaction, a MIRROR_PID_RESET barrier (B mirrors A, then
// stops), and data written on B after the failover by a producer that drew
// A's first producer id. It returns B's partition directory (B closed
// cleanly) and A's cluster id.
func buildGoldenPartition(t *testing.T) (string, string) {
	const topic = "golden"
	ctx := context.Background()
	// Small segments and an index entry per batch, on both clusters (a
	// mirror copies the source topic's configs). The records are stamped
	// in 2100, so the dump does not change with the day: the future
	// bound (an hour, as Kafka 4.0) is lifted.
	opts := []minibrokertest.Option{minibrokertest.Set("log.index.interval.bytes", "1"),
		minibrokertest.Set("log.segment.bytes", "700"),
		minibrokertest.Set("log.message.timestamp.after.max.ms", "9223372036854775807")}
	a := minibrokertest.Start(t, append(opts, minibrokertest.Topic(topic, 1))...)
	b := minibrokertest.Start(t, opts...)
	ts := int64(goldenTS)
	rec := func(key, value string, headers ...kgo.RecordHeader) *kgo.Record {
		ts++
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(value), Headers: headers,
			Timestamp: time.UnixMilli(ts)}
		if key != "" {
			r.Key = []byte(key)
		}
		return r
	}
	client := func(addr string, opts ...kgo.Opt) *kgo.Client {
		// Manual flushing, not a long linger: in one make test run the
		// first of three records lingering for a minute went out in a
		// batch of its own, and the dump differed from the golden file;
		// with manual flushing nothing is sent before Flush.
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ManualFlushing()}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	// produce sends recs as one batch: they wait for Flush.
	produce := func(cl *kgo.Client, recs ...*kgo.Record) {
		t.Helper()
		errs := make(chan error, len(recs))
		for _, r := range recs {
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) { errs <- err })
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		for range recs {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}

	plain := client(a.Addr())
	produce(plain, rec("key-1", "plain value 1", kgo.RecordHeader{Key: "h1", Value: []byte("v1")}))
	produce(plain, rec("", "null key"), rec("key-3", "\x00\x01binary\xff"))
	for _, codec := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(),
		kgo.Lz4Compression(), kgo.ZstdCompression()} {
		cl := client(a.Addr(), kgo.ProducerBatchCompression(codec))
		var recs []*kgo.Record
		for i := 0; i < 3; i++ {
			recs = append(recs, rec("ck", strings.Repeat("compressible ", 8)))
		}
		produce(cl, recs...)
	}
	txn := client(a.Addr(), kgo.TransactionalID("golden-txn"), kgo.TransactionTimeout(30*time.Second))
	for _, commit := range []bool{true, false} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		value := "committed"
		if !commit {
			value = "aborted"
		}
		produce(txn, rec("t", value+" 1"), rec("t", value+" 2"))
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}

	m := b.Mirror("from-a", a.Addr()).Start(topic)
	m.WaitCaughtUp(30 * time.Second)
	m.Stop() // the barrier
	produce(client(b.Addr()), rec("after", "written on B after the failover"))
	b.Close()
	return filepath.Join(b.DataDir(), topic+"-0"), a.ClusterID()
}

// mask makes a dump deterministic: the partition directory becomes
// PARTITION, the source cluster id SOURCE-CLUSTER-ID, and what a broker
// sets from its clock becomes MASKED: every timestamp before goldenTS
// (those of COMMIT/ABORT markers and of the barrier, and a snapshot's
// last timestamp for a producer whose last batch was a marker), and the
// CRC of control batches, which covers their timestamps. Data batches
// carry the fixed timestamps from goldenTS on and need no masking.
func mask(out, dir, clusterID string, asJSON bool) string {
	out = strings.ReplaceAll(out, dir, "PARTITION")
	out = strings.ReplaceAll(out, clusterID, "SOURCE-CLUSTER-ID")
	lines := strings.Split(out, "\n")
	textTS := regexp.MustCompile(`([A-Za-z]*[tT]imestamp): (-?\d+)`)
	textCRC := regexp.MustCompile(`crc: \d+`)
	for i, line := range lines {
		if asJSON {
			var obj map[string]any
			if json.Unmarshal([]byte(line), &obj) != nil {
				continue
			}
			changed := maskJSON(obj)
			if obj["kind"] == "batch" && obj["control"] == true {
				obj["crc"], changed = "MASKED", true
			}
			if changed { // re-encoded with sorted keys: stable too
				b, _ := json.Marshal(obj)
				lines[i] = string(b)
			}
			continue
		}
		line = textTS.ReplaceAllStringFunc(line, func(m string) string {
			sub := textTS.FindStringSubmatch(m)
			if v, err := strconv.ParseInt(sub[2], 10, 64); err == nil && v > 0 && v < goldenTS {
				return sub[1] + ": MASKED"
			}
			return m
		})
		if strings.HasPrefix(line, "baseOffset:") && strings.Contains(line, "isControl: true") {
			line = textCRC.ReplaceAllString(line, "crc: MASKED")
		}
		lines[i] = line
	}
	return strings.Join(lines, "\n")
}

// maskJSON masks clock-derived timestamps anywhere in a decoded object
// and reports whether it changed anything.
func maskJSON(v any) bool {
	changed := false
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if f, ok := x.(float64); ok && strings.HasSuffix(k, "timestamp") && f > 0 && f < goldenTS {
				v[k], changed = "MASKED", true
				continue
			}
			changed = maskJSON(x) || changed
		}
	case []any:
		for _, x := range v {
			changed = maskJSON(x) || changed
		}
	}
	return changed
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if os.Getenv("MINIBROKER_UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with MINIBROKER_UPDATE_GOLDEN=1)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (regenerate with MINIBROKER_UPDATE_GOLDEN=1 if intended); got:\n%s", name, path, got)
	}
}

// textDumpIsGolden reports whether dir's text dump is the golden one.
func textDumpIsGolden(t *testing.T, dir, clusterID string) bool {
	var buf bytes.Buffer
	if err := NewDumper(&buf, Options{PrintData: true, Deep: true}).DumpPath(dir); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "golden", "partition.txt"))
	return err == nil && mask(buf.String(), dir, clusterID, false) == string(want)
}

// TestGoldenPartitionDump dumps and verifies a partition directory written
// by real brokers, and compares text and JSON output with testdata/golden.
func TestGoldenPartitionDump(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two brokers")
	}
	// kgo decides batch boundaries: in two make test runs out of many it
	// sent the first of a Flush's records in a batch of its own (a
	// minute's linger the first time, manual flushing the second, the
	// snappy client's three records as 1 + 2), and the dump differed from
	// the golden file. A partition whose text dump differs is built again,
	// up to three times; a change in what the tools print differs every
	// time and still fails.
	var dir, clusterID string
	for attempt := 1; ; attempt++ {
		dir, clusterID = buildGoldenPartition(t)
		if attempt == 3 || os.Getenv("MINIBROKER_UPDATE_GOLDEN") == "1" || textDumpIsGolden(t, dir, clusterID) {
			break
		}
		t.Logf("attempt %d: the text dump differs from the golden file; building the partition again", attempt)
	}
	for _, asJSON := range []bool{false, true} {
		var buf bytes.Buffer
		d := NewDumper(&buf, Options{PrintData: true, Deep: true, JSON: asJSON})
		if err := d.DumpPath(dir); err != nil {
			t.Fatal(err)
		}
		if d.Damaged != 0 || d.DeepFailed != 0 {
			t.Errorf("json=%v: %d damaged, %d failed deep checks:\n%s", asJSON, d.Damaged, d.DeepFailed, buf.String())
		}
		name := "partition.txt"
		if asJSON {
			name = "partition.jsonl"
		}
		checkGolden(t, name, mask(buf.String(), dir, clusterID, asJSON))

		parts, err := GroupPaths([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		v, err := VerifyPartition(parts[0], VerifyOptions{ProducerIDExpirationMs: 86_400_000})
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Findings) != 0 || v.Barriers != 1 {
			t.Errorf("verify-log: %d barriers, findings %s", v.Barriers, kinds(v))
		}
		buf.Reset()
		if err := WriteReport(&buf, parts[0], v, asJSON); err != nil {
			t.Fatal(err)
		}
		name = "verify.txt"
		if asJSON {
			name = "verify.jsonl"
		}
		checkGolden(t, name, mask(buf.String(), dir, clusterID, asJSON))
	}
}
