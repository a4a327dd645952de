package log

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestCleanReopenAfterFlushedRolls: a segment rolled after a full flush
// already ran since its last append (each segment here holds one batch,
// flushed before the next append rolls it) gets its time index file by
// the next full flush, so a clean open finds every index in place: no
// "index damaged" warning, no recovery (nothing verified), and time
// lookups answer from each segment's own time index.
func TestCleanReopenAfterFlushedRolls(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 20 << 10
	l := openTest(t, dir, cfg, Options{})
	for i := range 6 {
		leo := l.LogEndOffset()
		b := testBatch{base: leo, records: 3, ts: 1000 + int64(i)*10, valueSize: 5000}.build()
		if _, err := l.AppendVerified(b); err != nil {
			t.Fatal(err)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	bases := l.SegmentBaseOffsets()
	if len(bases) != 6 {
		t.Fatalf("want one batch per segment, got segments %v", bases)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	l = openTest(t, dir, cfg, Options{Logger: zap.New(core)})
	defer l.Close()
	for _, e := range logs.All() {
		t.Errorf("clean open logged %q %v", e.Message, e.ContextMap())
	}
	for _, s := range l.segments {
		if s.verified != unverified(s.size) {
			t.Fatalf("segment %d was recovered after a clean shutdown", s.base)
		}
	}
	for i, base := range bases {
		off, ts, ok := l.OffsetForTimestamp(1000 + int64(i)*10)
		if !ok || off != base || ts != 1000+int64(i)*10 {
			t.Fatalf("timestamp %d: offset %d ts %d ok %v, want segment %d's first", 1000+i*10, off, ts, ok, base)
		}
	}
}
