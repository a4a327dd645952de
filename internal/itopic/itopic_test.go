package itopic

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/partition"
)

func openLog(t *testing.T, dir string) Log {
	t.Helper()
	cfg := partition.Config{Log: mlog.DefaultConfig(), MessageMaxBytes: 4 << 20, Compacted: true}
	var l Log
	l.Topic = "__itopic_test"
	l.Now = func() time.Time { return time.UnixMilli(1_700_000_000_000) }
	for i := range int32(2) {
		p, err := partition.Open(filepath.Join(dir, fmt.Sprintf("__itopic_test-%d", i)), l.Topic, i, cfg, partition.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		l.Parts = append(l.Parts, p)
	}
	return l
}

// TestAppendReplay: records appended to a partition, split into batches
// of at most BatchBytes, read back by Replay in order with their keys,
// values and tombstones (nil values), after a reopen of the partition;
// the other partition stays empty, and a partition out of range is an
// error.
func TestAppendReplay(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	const n = 300
	val := bytes.Repeat([]byte{'v'}, 4<<10) // 300 × 4 KiB: more than two batches
	rec := func(i int) (key, value []byte) {
		if i%7 == 0 {
			return []byte(fmt.Sprintf("k%d", i)), nil // a tombstone
		}
		return []byte(fmt.Sprintf("k%d", i)), append([]byte(fmt.Sprintf("%d:", i)), val...)
	}
	end, err := l.Append(1, n, rec)
	if err != nil || end != n {
		t.Fatalf("Append: end %d, %v", end, err)
	}
	if err := l.Sync(1, end); err != nil {
		t.Fatal(err)
	}
	if off := l.Parts[1].Offsets(); off.LogEnd != n {
		t.Fatalf("log end %d", off.LogEnd)
	}
	for _, p := range l.Parts {
		p.Close()
	}
	l = openLog(t, dir)
	i := 0
	if err := l.Replay(1, func(key, value []byte) {
		wk, wv := rec(i)
		if !bytes.Equal(key, wk) || !bytes.Equal(value, wv) || (wv == nil) != (value == nil) {
			t.Fatalf("record %d: key %q, %d value bytes (nil %v); want %q, %d (nil %v)", i, key, len(value), value == nil, wk, len(wv), wv == nil)
		}
		i++
	}); err != nil {
		t.Fatal(err)
	}
	if i != n {
		t.Fatalf("replayed %d of %d records", i, n)
	}
	if err := l.Replay(0, func(key, value []byte) { t.Fatalf("partition 0 holds %q", key) }); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(2, 1, rec); err == nil {
		t.Fatal("append to partition 2 of 2 accepted")
	}
	if l.Err(1) != nil {
		t.Fatalf("partition offline: %v", l.Err(1))
	}
}

// TestEachRecordStopsAtGarbage: a records section cut short yields the
// whole records before the cut and nothing after it, without a panic.
func TestEachRecordStopsAtGarbage(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	if _, err := l.Append(0, 3, func(i int) ([]byte, []byte) { return []byte{byte('a' + i)}, []byte("value") }); err != nil {
		t.Fatal(err)
	}
	raw, err := l.Parts[0].ReadRaw(0, 3, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	section := raw[61:] // the batch header is 61 bytes
	var got []string
	EachRecord(section, 3, func(key, _ []byte) { got = append(got, string(key)) })
	if fmt.Sprint(got) != "[a b c]" {
		t.Fatalf("whole section: %v", got)
	}
	for cut := range len(section) {
		got = got[:0]
		EachRecord(section[:cut], 3, func(key, _ []byte) { got = append(got, string(key)) })
		if len(got) > 2 {
			t.Fatalf("cut at %d of %d: %v", cut, len(section), got)
		}
	}
}

// TestAppendTooLarge: a batch longer than the topic's max.message.bytes
// is refused with partition.ErrTooLarge and nothing is written (the
// coordinator's append path checks only the size of what the broker
// built); a record that fits is appended after it.
func TestAppendTooLarge(t *testing.T) {
	l := openLog(t, t.TempDir()) // max.message.bytes 4 MiB
	big := bytes.Repeat([]byte{'x'}, 4<<20)
	_, err := l.Append(0, 1, func(int) ([]byte, []byte) { return []byte("k"), big })
	if !errors.Is(err, partition.ErrTooLarge) {
		t.Fatalf("a 4 MiB record: %v, want ErrTooLarge", err)
	}
	if end := l.Parts[0].Offsets().LogEnd; end != 0 {
		t.Fatalf("log end %d after the refusal", end)
	}
	end, err := l.Append(0, 1, func(int) ([]byte, []byte) { return []byte("k"), []byte("v") })
	if err != nil || end != 1 {
		t.Fatalf("a small record after it: end %d, %v", end, err)
	}
}

// TestReplayBatches: a transactional batch of a producer, its COMMIT
// marker and a plain batch read back with their batch's producer,
// transactional flag and marker; Replay gives the records alone.
func TestReplayBatches(t *testing.T) {
	l := openLog(t, t.TempDir())
	one := func(k, v string) func(int) ([]byte, []byte) {
		return func(int) ([]byte, []byte) { return []byte(k), []byte(v) }
	}
	if _, err := l.AppendAs(0, 1, one("a", "1"), Producer{ID: 7, Epoch: 3}); err != nil {
		t.Fatal(err)
	}
	end, err := l.WriteMarker(0, 7, 3, true, 0)
	if err != nil || end != 2 {
		t.Fatalf("marker: end %d, %v", end, err)
	}
	if end, err = l.Append(0, 1, one("b", "2")); err != nil || end != 3 || l.End(0) != 3 {
		t.Fatalf("plain append: end %d (End %d), %v", end, l.End(0), err)
	}
	var got []string
	err = l.ReplayBatches(0, func(b BatchInfo, key, value []byte) {
		got = append(got, fmt.Sprintf("%d/%d txn=%v control=%v commit=%v %s=%s", b.Producer.ID, b.Producer.Epoch,
			b.Transactional, b.Control, b.Commit, key, value))
	})
	want := []string{"7/3 txn=true control=false commit=false a=1", "7/3 txn=true control=true commit=true =",
		"-1/-1 txn=false control=false commit=false b=2"}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ReplayBatches: %q, %v; want %q", got, err, want)
	}
	got = nil
	if err := l.Replay(0, func(key, value []byte) { got = append(got, string(key)+"="+string(value)) }); err != nil ||
		fmt.Sprint(got) != "[a=1 b=2]" {
		t.Fatalf("Replay: %q, %v", got, err)
	}
}
