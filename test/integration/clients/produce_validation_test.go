package clients

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestProduceValidatesRecords: the broker walks every record of a
// client's batch as Kafka's LogValidator does. A batch whose CRC is good
// but whose records do not parse, or two batches for one partition, are
// INVALID_RECORD and nothing is written, zstd before Produce v7 is
// UNSUPPORTED_COMPRESSION_TYPE; a compacted topic refuses
// records without a key, naming each in record_errors, through a raw
// request and through kgo.
func TestProduceValidatesRecords(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("plain", 1),
		minibrokertest.TopicWithConfigs("compacted", 1, map[string]string{"cleanup.policy": "compact"}))
	rp := &itest.RawProducer{Rc: itest.DialRaw(t, c.Addr())}

	// A record whose length claims one byte more than it holds: the
	// batch's CRC is recomputed, so only the record walk can see it.
	lying := itest.KeyedBatch([]byte("k"), []byte("k"))
	lying[61] += 2 // zigzag: length + 1
	binary.BigEndian.PutUint32(lying[17:], itest.Crc32c(lying[21:]))
	two := append(itest.KeyedBatch([]byte("a")), itest.KeyedBatch([]byte("b"))...)
	for i, bad := range [][]byte{lying, two} {
		if p := rp.ProduceResponse(t, "plain", bad); p.ErrorCode != kerr.InvalidRecord.Code {
			t.Fatalf("bad input %d: code %d, want INVALID_RECORD", i, p.ErrorCode)
		}
	}
	// zstd before Produce v7, as Kafka: UNSUPPORTED_COMPRESSION_TYPE; the
	// same batch at v7 is taken.
	zstdBatch := itest.KeyedBatch([]byte("z"))
	zstdBatch[22] |= 4 // the codec bits; the records are not zstd, but the version check comes first
	binary.BigEndian.PutUint32(zstdBatch[17:], itest.Crc32c(zstdBatch[21:]))
	if p := rp.ProduceVersion(t, 6, "plain", zstdBatch); p.ErrorCode != kerr.UnsupportedCompressionType.Code {
		t.Fatalf("zstd at v6: code %d, want UNSUPPORTED_COMPRESSION_TYPE", p.ErrorCode)
	}
	if p := rp.ProduceVersion(t, 7, "plain", zstdBatch); p.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("zstd at v7 with records that are not zstd: code %d, want INVALID_RECORD", p.ErrorCode)
	}
	if p := rp.ProduceResponse(t, "plain", itest.KeyedBatch(nil, []byte("k"))); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("good batch: code %d base %d", p.ErrorCode, p.BaseOffset)
	}

	p := rp.ProduceResponse(t, "compacted", itest.KeyedBatch(nil, []byte("k"), nil))
	var refused []int32
	for _, e := range p.ErrorRecords {
		refused = append(refused, e.RelativeOffset)
	}
	if p.ErrorCode != kerr.InvalidRecord.Code || !slices.Equal(refused, []int32{0, 2}) {
		t.Fatalf("keyless records on a compacted topic: code %d, record errors %v", p.ErrorCode, refused)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.DefaultProduceTopic("compacted"), kgo.RecordRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("kgo, no key: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("keyed")}).FirstErr(); err != nil {
		t.Fatalf("kgo, keyed: %v", err)
	}

	if got := itest.ConsumeAll(t, c.Addr(), "plain", 2); len(got) != 2 || got[1].Offset != 1 {
		t.Fatalf("plain holds %d records, want only the good batch's 2", len(got))
	}
	if got := itest.ConsumeAll(t, c.Addr(), "compacted", 1); len(got) != 1 || string(got[0].Value) != "keyed" {
		t.Fatalf("compacted holds %d records, want the keyed one", len(got))
	}
}

// TestProduceBoundsTimestamps: as Kafka 4, a CreateTime topic refuses
// records stamped more than message.timestamp.after.max.ms (an hour by
// default) after the broker's clock or message.timestamp.before.max.ms
// before it, with INVALID_TIMESTAMP, naming each refused record; kgo
// fails such a record without retrying. A LogAppendTime topic keeps no
// producer timestamps and takes them all.
func TestProduceBoundsTimestamps(t *testing.T) {
	t.Parallel()
	const hour = time.Hour
	c := minibrokertest.Start(t, minibrokertest.Topic("ts", 1),
		minibrokertest.TopicWithConfigs("ts-before", 1, map[string]string{
			"message.timestamp.before.max.ms": "60000", "message.timestamp.after.max.ms": "9223372036854775807"}),
		minibrokertest.TopicWithConfigs("ts-lat", 1, map[string]string{"message.timestamp.type": "LogAppendTime"}))

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.RecordRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	produce := func(topic string, ts time.Time) error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic), Timestamp: ts}).FirstErr()
	}
	now := time.Now()
	for _, tc := range []struct {
		topic string
		ts    time.Time
		want  error
	}{
		{"ts", now.Add(2 * hour), kerr.InvalidTimestamp}, // Kafka 4.0's default after bound
		{"ts", now.Add(30 * time.Minute), nil},
		{"ts", now.Add(-400 * 24 * hour), nil}, // no before bound by default
		{"ts-before", now.Add(-2 * time.Minute), kerr.InvalidTimestamp},
		{"ts-before", now.Add(-30 * time.Second), nil},
		{"ts-before", now.Add(48 * hour), nil},
		{"ts-lat", now.Add(48 * hour), nil},
		{"ts-lat", now.Add(-400 * 24 * hour), nil},
	} {
		if err := produce(tc.topic, tc.ts); !errors.Is(err, tc.want) && (err != nil || tc.want != nil) {
			t.Errorf("%s, timestamp %v from now: %v, want %v", tc.topic, tc.ts.Sub(now).Round(time.Second), err, tc.want)
		}
	}

	// A raw batch of three, the middle one two hours ahead: the batch is
	// refused with record_errors naming it, and nothing is written.
	rp := &itest.RawProducer{Rc: itest.DialRaw(t, c.Addr())}
	var body []byte
	for i, d := range []time.Duration{0, 2 * hour, 0} {
		rec := kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: d.Milliseconds(), Value: []byte("v")}
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		body = rec.AppendTo(body)
	}
	first := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: 2, FirstTimestamp: first, MaxTimestamp: first + (2 * hour).Milliseconds(),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 3, Records: body}
	rb.Length = int32(49 + len(body))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], itest.Crc32c(raw[21:]))
	p := rp.ProduceResponse(t, "ts", raw)
	if p.ErrorCode != kerr.InvalidTimestamp.Code || len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != 1 ||
		p.ErrorRecords[0].ErrorMessage == nil {
		t.Fatalf("raw batch, one record 2 h ahead: code %d, record errors %+v", p.ErrorCode, p.ErrorRecords)
	}
	// The same batch on the LogAppendTime topic is stamped and taken.
	if p := rp.ProduceResponse(t, "ts-lat", raw); p.ErrorCode != 0 || p.LogAppendTime < first {
		t.Fatalf("raw batch on the LogAppendTime topic: code %d, log append time %d", p.ErrorCode, p.LogAppendTime)
	}

	// DescribeConfigs shows the bounds, defaults and set.
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, "ts", "ts-before")
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]int64{"ts": 2, "ts-before": 2} {
		if o, _ := ends.Lookup(topic, 0); o.Offset != want {
			t.Errorf("%s ends at %d, want %d (the records in bounds)", topic, o.Offset, want)
		}
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "ts", "ts-before")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ts/message.timestamp.after.max.ms": "3600000", "ts/message.timestamp.before.max.ms": "9223372036854775807",
		"ts-before/message.timestamp.before.max.ms": "60000"}
	for _, rc := range rcs {
		for _, cfg := range rc.Configs {
			k := rc.Name + "/" + cfg.Key
			if w, ok := want[k]; ok {
				if cfg.MaybeValue() != w {
					t.Errorf("%s = %q, want %q", k, cfg.MaybeValue(), w)
				}
				delete(want, k)
			}
		}
	}
	if len(want) != 0 {
		t.Errorf("DescribeConfigs lacks %v", want)
	}
}

// TestProduceRewritesMaxTimestamp: as Kafka's LogValidator, the broker
// stores a batch's max timestamp as its records' largest, not as the
// producer wrote it, so ListOffsets by time finds records a producer's
// wrong max timestamp would hide.
func TestProduceRewritesMaxTimestamp(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("mt", 1))
	rp := &itest.RawProducer{Rc: itest.DialRaw(t, c.Addr())}
	var body []byte
	for i := range 3 {
		rec := kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: int64(i), Value: []byte("v")}
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		body = rec.AppendTo(body)
	}
	first := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: 2, FirstTimestamp: first, MaxTimestamp: first - 1000, // wrong
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 3, Records: body}
	rb.Length = int32(49 + len(body))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], itest.Crc32c(raw[21:]))
	if p := rp.ProduceResponse(t, "mt", raw); p.ErrorCode != 0 {
		t.Fatalf("produce: code %d", p.ErrorCode)
	}

	cl := itest.NewClient(t, c.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	listed, err := kadm.NewClient(cl).ListOffsetsAfterMilli(ctx, first+1, "mt")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := listed.Lookup("mt", 0); o.Offset != 1 || o.Timestamp != first+1 {
		t.Errorf("first record at or after %d: offset %d timestamp %d, want 1 and %d", first+1, o.Offset, o.Timestamp, first+1)
	}
	// KIP-734's max timestamp (-3): the record that holds it.
	resp, err := itest.ListOffsetsRequest("mt", -3).RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 2 || p.Timestamp != first+2 {
		t.Errorf("max timestamp: code %d offset %d timestamp %d, want 2 and %d", p.ErrorCode, p.Offset, p.Timestamp, first+2)
	}
	// The rewritten batch's CRC holds: after a restart the broker checks
	// it on the first read (KAFKA_STORAGE_ERROR if it failed).
	c.Restart()
	if got := itest.ConsumeAll(t, c.Addr(), "mt", 3); len(got) != 3 || got[2].Timestamp.UnixMilli() != first+2 {
		t.Fatalf("read back %d records", len(got))
	}
}
