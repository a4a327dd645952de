package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestKcatMetadata: `kcat -L` lists this broker as controller and every
// topic with its partitions, each led by node 0 with replicas and ISR [0].
func TestKcatMetadata(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, append(itest.KafkaCoordinatorTopics(), minibrokertest.Topic("alpha", 3), minibrokertest.Topic("beta", 1))...)

	text, _ := itest.RunKcat(t, "", "-L", "-b", c.Addr())
	for _, want := range []string{
		"Metadata for all topics (from broker 0: " + c.Addr() + "/0):",
		" 1 brokers:\n  broker 0 at " + c.Addr() + " (controller)\n",
		" 6 topics:\n", // and the internal __consumer_offsets, __transaction_state, __mirror_state, __share_group_state
		"  topic \"__consumer_offsets\" with 50 partitions:\n",
		"  topic \"alpha\" with 3 partitions:\n" +
			"    partition 0, leader 0, replicas: 0, isrs: 0\n" +
			"    partition 1, leader 0, replicas: 0, isrs: 0\n" +
			"    partition 2, leader 0, replicas: 0, isrs: 0\n",
		"  topic \"beta\" with 1 partitions:\n    partition 0, leader 0, replicas: 0, isrs: 0\n",
	} {
		if !strings.Contains(text+"\n", want) {
			t.Fatalf("kcat -L output lacks %q:\n%s", want, text)
		}
	}

	var md struct {
		ControllerID int32 `json:"controllerid"`
		Brokers      []struct {
			ID   int32  `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic      string `json:"topic"`
			Partitions []struct {
				Partition int32            `json:"partition"`
				Leader    int32            `json:"leader"`
				Replicas  []map[string]int `json:"replicas"`
				ISRs      []map[string]int `json:"isrs"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	js, _ := itest.RunKcat(t, "", "-L", "-J", "-b", c.Addr())
	if err := json.Unmarshal([]byte(js), &md); err != nil {
		t.Fatalf("kcat -L -J: %v", err)
	}
	if md.ControllerID != 0 || len(md.Brokers) != 1 || md.Brokers[0].ID != 0 || md.Brokers[0].Name != c.Addr() {
		t.Fatalf("kcat -L -J: controller %d, brokers %+v; want 0 and [0 %s]", md.ControllerID, md.Brokers, c.Addr())
	}
	var got []string
	for _, tp := range md.Topics {
		if strings.HasPrefix(tp.Topic, "__") {
			continue // the internal topics, checked above
		}
		for _, p := range tp.Partitions {
			if p.Leader != 0 || len(p.Replicas) != 1 || p.Replicas[0]["id"] != 0 || len(p.ISRs) != 1 || p.ISRs[0]["id"] != 0 {
				t.Fatalf("%s/%d: leader %d replicas %v isrs %v", tp.Topic, p.Partition, p.Leader, p.Replicas, p.ISRs)
			}
			got = append(got, fmt.Sprintf("%s/%d", tp.Topic, p.Partition))
		}
	}
	slices.Sort(got)
	if want := []string{"alpha/0", "alpha/1", "alpha/2", "beta/0"}; !slices.Equal(got, want) {
		t.Fatalf("kcat -L -J partitions %v, want %v", got, want)
	}
}

// TestKcatProduceConsume: `kcat -P` (plain, each -z codec, and as an
// idempotent producer) then `kcat -C -o beginning -e`: every line comes
// back exactly once, in the partition librdkafka's default partitioner
// picks (CRC-32 of the key modulo the partition count), at offsets 0, 1,
// 2, … in produce order. The stored batches keep kcat's codec.
func TestKcatProduceConsume(t *testing.T) {
	t.Parallel()
	itest.KcatBinary(t)
	cases := []struct {
		name  string
		args  []string
		codec uint8 // RecordAttrs.CompressionType of the stored batches
		idem  bool
	}{
		{"plain", nil, 0, false},
		{"gzip", []string{"-z", "gzip"}, 1, false},
		{"snappy", []string{"-z", "snappy"}, 2, false},
		{"lz4", []string{"-z", "lz4"}, 3, false},
		{"zstd", []string{"-z", "zstd"}, 4, false},
		{"idempotent", []string{"-X", "enable.idempotence=true"}, 0, true},
		{"idempotent-zstd", []string{"-X", "enable.idempotence=true", "-z", "zstd"}, 4, true},
	}
	const parts, n = 3, 300
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := minibrokertest.Start(t, minibrokertest.Topic("kc", parts))
			var in strings.Builder
			want := make([][]string, parts) // per partition: "key value"
			for i := range n {
				// Values compress well even alone: librdkafka sends a batch
				// uncompressed when compression would not make it smaller.
				key, value := fmt.Sprintf("key-%d", i), fmt.Sprintf("kcat value %05d %s", i, strings.Repeat("z", 200))
				fmt.Fprintf(&in, "%s:%s\n", key, value)
				p := crc32.ChecksumIEEE([]byte(key)) % parts
				want[p] = append(want[p], key+" "+value)
			}
			// -d msg logs each batch librdkafka sends, with its codec.
			args := append([]string{"-P", "-b", c.Addr(), "-t", "kc", "-K:", "-X", "linger.ms=5", "-d", "msg"}, tc.args...)
			_, debug := itest.RunKcat(t, in.String(), args...)
			wantCodec := tc.codec
			if strings.Contains(debug, "Broker does not support compression type") {
				// librdkafka before the fix for confluentinc/librdkafka#4956
				// only compresses gzip, snappy and lz4 when the broker
				// offers Produce v0, which Kafka 4 (KIP-896) and minibroker
				// (v3+) do not: it sends those batches uncompressed.
				t.Logf("librdkafka %s: not compressing with %s against a broker without Produce v0 (librdkafka#4956)", itest.LibrdkafkaVersion(t), tc.name)
				wantCodec = 0
			}

			out, _ := itest.RunKcat(t, "", "-C", "-b", c.Addr(), "-t", "kc", "-o", "beginning", "-e", "-f", "%p %o %k %s\n")
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != n {
				t.Fatalf("kcat -C printed %d lines, want %d:\n%s", len(lines), n, out)
			}
			got := make([][]string, parts)
			for _, line := range lines {
				var p, off int
				var rest string
				if _, err := fmt.Sscanf(line, "%d %d", &p, &off); err != nil || p < 0 || p >= parts {
					t.Fatalf("bad kcat line %q", line)
				}
				rest = strings.SplitN(line, " ", 3)[2]
				if off != len(got[p]) {
					t.Fatalf("partition %d: offset %d, want %d (%q)", p, off, len(got[p]), line)
				}
				got[p] = append(got[p], rest)
			}
			for p := range parts {
				if !slices.Equal(got[p], want[p]) {
					t.Fatalf("partition %d: consumed %d records %q…, want %d %q…", p, len(got[p]), head(got[p]), len(want[p]), head(want[p]))
				}
			}

			for _, r := range itest.ConsumeAll(t, c.Addr(), "kc", n) {
				if ct := r.Attrs.CompressionType(); ct != wantCodec {
					t.Fatalf("record p%d@%d: stored batch compression %d, want %d", r.Partition, r.Offset, ct, wantCodec)
				}
				// An idempotent kcat got producer id 0 (the first on a fresh
				// cluster); a plain one sends none (-1).
				if wantPID := map[bool]int64{true: 0, false: -1}[tc.idem]; r.ProducerID != wantPID {
					t.Fatalf("record p%d@%d: producer id %d, want %d", r.Partition, r.Offset, r.ProducerID, wantPID)
				}
			}
		})
	}
}

func head(s []string) []string { return s[:min(len(s), 3)] }

// TestFetchEmptyRecordsNotNull: a partition with nothing to return comes
// back with an empty record set (size 0), never a null one (size -1), at
// every Fetch version, whether empty, read at its end, or in error. Kafka
// does the same; librdkafka rejects a null set ("invalid MessageSetSize
// -1"), so before this was fixed `kcat -C -e` never saw the end of a
// partition and hung.
func TestFetchEmptyRecordsNotNull(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("empty", 2))
	cl := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("empty"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("one")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	topic, _ := c.Broker().Topic("empty")
	conn := itest.DialRaw(t, c.Addr())
	for corr, version := range []int16{4, 7, 11, 12, 13, 16} {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch = version, -1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "empty", topic.ID
		for _, fp := range []struct {
			partition int32
			offset    int64
		}{{0, 0}, {1, 1}, {7, 0}} { // empty; at its end; unknown partition
			p := kmsg.NewFetchRequestTopicPartition()
			p.Partition, p.FetchOffset, p.PartitionMaxBytes, p.CurrentLeaderEpoch = fp.partition, fp.offset, 1<<20, -1
			rt.Partitions = append(rt.Partitions, p)
		}
		req.Topics = append(req.Topics, rt)
		conn.Write(itest.RequestFrame(req, int32(corr)))
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = version
		if err := resp.ReadFrom(conn.ReadResponse(int32(corr), req.IsFlexible())); err != nil {
			t.Fatalf("fetch v%d: decode: %v", version, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
			t.Fatalf("fetch v%d: %d topics", version, len(resp.Topics))
		}
		wantErr := []int16{0, 0, kerr.UnknownTopicOrPartition.Code}
		for i, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != wantErr[i] || p.RecordBatches == nil || len(p.RecordBatches) != 0 {
				t.Fatalf("fetch v%d partition %d: error %d, records %v (null %v); want error %d and an empty, non-null set",
					version, p.Partition, p.ErrorCode, p.RecordBatches, p.RecordBatches == nil, wantErr[i])
			}
		}
	}
}

// TestKcatConsumesCompressedBatches: batches kgo compressed with each
// codec (one codec per partition; the last partition uncompressed) are
// read by kcat exactly, from the beginning and with -o -N (the last N per
// partition, through ListOffsets latest). -o s@TIME (ListOffsets by
// timestamp) starts at the first record at or after the time, inside a
// batch, on the uncompressed partition. On compressed partitions
// minibroker answers the batch's base offset instead (internal/log
// firstRecordAtOrAfter does not decompress), where Kafka decompresses and
// answers the record: a known deviation, not asserted here.
func TestKcatConsumesCompressedBatches(t *testing.T) {
	t.Parallel()
	itest.KcatBinary(t)
	codecs := []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression(), kgo.NoCompression()}
	wantCodec := []uint8{1, 2, 3, 4, 0}
	const n = 50
	parts := len(codecs)
	c := minibrokertest.Start(t, minibrokertest.Topic("zipped", int32(parts)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	want := make([][]string, parts)
	for p, codec := range codecs {
		prod := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("zipped"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(50*time.Millisecond))
		var recs []*kgo.Record
		for i := range n {
			key, value := fmt.Sprintf("k%d-%d", p, i), fmt.Sprintf("compressed %d/%02d %s", p, i, strings.Repeat("y", 100))
			recs = append(recs, &kgo.Record{Partition: int32(p), Key: []byte(key), Value: []byte(value), Timestamp: base.Add(time.Duration(i) * time.Second)})
			want[p] = append(want[p], fmt.Sprintf("%d %d %s %s", p, i, key, value))
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range itest.ConsumeAll(t, c.Addr(), "zipped", n*parts) {
		if ct := r.Attrs.CompressionType(); ct != wantCodec[r.Partition] {
			t.Fatalf("record p%d@%d: stored compression %d, want %d", r.Partition, r.Offset, ct, wantCodec[r.Partition])
		}
	}

	// consume runs kcat -C with an offset form and groups its lines by
	// partition.
	consume := func(offset string) [][]string {
		t.Helper()
		out, _ := itest.RunKcat(t, "", "-C", "-b", c.Addr(), "-t", "zipped", "-o", offset, "-e", "-f", "%p %o %k %s\n")
		got := make([][]string, parts)
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			var p int
			if _, err := fmt.Sscan(line, &p); err != nil || p < 0 || p >= parts {
				t.Fatalf("-o %s: bad line %q", offset, line)
			}
			got[p] = append(got[p], line)
		}
		return got
	}
	for _, tc := range []struct {
		offset string
		from   int   // first offset expected per partition
		only   []int // partitions checked (nil: all)
	}{
		{"beginning", 0, nil},
		{"-3", n - 3, nil},
		{fmt.Sprintf("s@%d", base.Add(20*time.Second+time.Millisecond).UnixMilli()), 21, []int{parts - 1}},
	} {
		got := consume(tc.offset)
		for p := range parts {
			if tc.only != nil && !slices.Contains(tc.only, p) {
				continue
			}
			if !slices.Equal(got[p], want[p][tc.from:]) {
				t.Fatalf("-o %s partition %d: %d lines %q…, want %d from offset %d", tc.offset, p, len(got[p]), head(got[p]), n-tc.from, tc.from)
			}
		}
	}
}
