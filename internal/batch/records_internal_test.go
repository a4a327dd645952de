package batch

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStreamingWalksBounded: a gzip, lz4 or zstd walk waits for one of
// streamSlots (one per CPU), so crafted frames cannot each hold a
// 128 MiB zstd window at once; uncompressed batches need no slot.
func TestStreamingWalksBounded(t *testing.T) {
	saved := streamSlots
	streamSlots = make(chan struct{}, 1)
	defer func() { streamSlots = saved }()

	var records []byte
	for i := range 10 {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte("v")}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		records = r.AppendTo(records)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	build := func(codec int16, body []byte) ([]byte, Header) {
		rb := kmsg.RecordBatch{Magic: 2, Attributes: codec, LastOffsetDelta: 9, ProducerID: -1, ProducerEpoch: -1,
			FirstSequence: -1, NumRecords: 10, Records: body}
		rb.Length = int32(HeaderSize - LogOverhead + len(body))
		raw := rb.AppendTo(nil)
		binary.BigEndian.PutUint32(raw[17:], ComputeCRC(raw))
		h, err := ParseHeader(raw)
		if err != nil {
			t.Fatal(err)
		}
		return raw, h
	}
	zraw, zh := build(CodecZstd, enc.EncodeAll(records, nil))
	raw, h := build(CodecNone, records)

	streamSlots <- struct{}{} // the only slot, taken
	done := make(chan error, 1)
	go func() { _, err := CheckRecords(zraw, &zh, Rules{}); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("a zstd walk ran with no slot free (%v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := CheckRecords(raw, &h, Rules{}); err != nil {
		t.Fatalf("uncompressed, slots taken: %v", err)
	}
	<-streamSlots
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the zstd walk did not run once the slot was free")
	}
}

// FuzzPlainBody: whatever the fast path takes, recordBody takes too,
// with the same key and timestamp delta (the fast path only skips work).
func FuzzPlainBody(f *testing.F) {
	for _, r := range []kmsg.Record{
		{Value: []byte("v")},
		{OffsetDelta: 9000, TimestampDelta64: -5, Key: []byte("k"), Value: make([]byte, 100)},
		{OffsetDelta: 70, Key: []byte{}, Value: nil},
		{Value: []byte("h"), Headers: []kmsg.Header{{Key: "a", Value: []byte("b")}}},
	} {
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		body := r.AppendTo(nil)
		_, n := zigzag(body)
		f.Add(body[n:])
	}
	f.Fuzz(func(t *testing.T, r []byte) {
		keyed, ts, ok := plainBody(r)
		if !ok {
			return
		}
		k2, ts2, err := recordBody(r)
		if err != nil || k2 != keyed || ts2 != ts {
			t.Fatalf("fast path: keyed %v ts %d; recordBody: %v %d %v", keyed, ts, k2, ts2, err)
		}
	})
}
