package log

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

const faultDir = "/data/topic-0"

// faultLog opens a log on an errorfs over a fresh MemFS.
func faultLog(t *testing.T, cfg Config) (*Log, *errorfs.FS, *errorfs.MemFS) {
	t.Helper()
	mem := errorfs.NewMem()
	e := errorfs.Wrap(mem)
	return openTest(t, faultDir, cfg, Options{FS: e}), e, mem
}

// reopenOn opens the partition on fsys (a restart) and returns its content.
func reopenOn(t *testing.T, fsys vfs.FS) (*Log, []byte) {
	t.Helper()
	l := openTest(t, faultDir, testConfig(), Options{FS: fsys})
	return l, readAll(t, l)
}

func fileSize(t *testing.T, fsys vfs.FS, base int64) int64 {
	t.Helper()
	st, err := fsys.Stat(segmentFileName(faultDir, base, logSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// expectOffline checks the log refuses writes with ErrStorage but still
// serves what was fsynced.
func expectOffline(t *testing.T, l *Log, durable []byte) {
	t.Helper()
	if _, err := l.Append(testBatch{base: l.LogEndOffset(), records: 1}.build()); !errors.Is(err, ErrStorage) {
		t.Fatalf("Append after failure: %v", err)
	}
	if err := l.AppendAbortedTxn(AbortedTxn{1, 0, 0, 0}); !errors.Is(err, ErrStorage) {
		t.Fatalf("AppendAbortedTxn after failure: %v", err)
	}
	if err := l.TruncateTo(0); !errors.Is(err, ErrStorage) {
		t.Fatalf("TruncateTo after failure: %v", err)
	}
	var got []byte
	for off := l.LogStartOffset(); off < l.FlushedOffset(); {
		b, err := l.Read(off, 1<<20, true)
		if err != nil {
			t.Fatalf("Read(%d) of durable data after failure: %v", off, err)
		}
		hs := headers(t, b)
		got = append(got, b...)
		off = hs[len(hs)-1].LastOffset() + 1
	}
	if !bytes.Equal(got, durable) {
		t.Fatalf("durable data served after failure: %d bytes, want %d", len(got), len(durable))
	}
	if f, e := l.FlushedOffset(), l.LogEndOffset(); f < e {
		if _, err := l.Read(f, 1<<20, true); !errors.Is(err, ErrStorage) {
			t.Fatalf("Read(%d) of unflushed data after failure: %v", f, err)
		}
	}
}

func TestFaultFailedWrite(t *testing.T) {
	l, e, mem := faultLog(t, testConfig())
	durable := slices.Concat(appendN(t, l, 5, 2, 0, 0, 30)...)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	unsynced := slices.Concat(appendN(t, l, 2, 2, 0, 0, 30)...)
	sizeBefore := fileSize(t, mem, 0)
	e.Inject(errorfs.Rule{Op: errorfs.OpWrite, PathContains: logSuffix, Count: 1})
	if _, err := l.Append(testBatch{base: 14, records: 2}.build()); !errors.Is(err, ErrStorage) || !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Append with failing write: %v", err)
	}
	expectOffline(t, l, durable)
	if err := l.Close(); !errors.Is(err, ErrStorage) {
		t.Fatalf("Close of a failed log: %v", err)
	}
	if got := fileSize(t, mem, 0); got != sizeBefore {
		t.Fatalf("segment size %d after failed write, want %d", got, sizeBefore)
	}
	// Power loss: only the fsynced batches.
	l2, got := reopenOn(t, mem.CrashClone())
	if !bytes.Equal(got, durable) || l2.LogEndOffset() != 10 {
		t.Fatalf("after crash: LEO %d, %d bytes", l2.LogEndOffset(), len(got))
	}
	l2.Close()
	// Process restart (page cache kept): every whole batch written.
	l3, got := reopenOn(t, mem)
	if !bytes.Equal(got, slices.Concat(durable, unsynced)) || l3.LogEndOffset() != 14 {
		t.Fatalf("after restart: LEO %d, %d bytes", l3.LogEndOffset(), len(got))
	}
	appendN(t, l3, 1, 1, 0, 0, 1) // writable again after the restart
	l3.Close()
}

func TestFaultFailedFsync(t *testing.T) {
	l, e, mem := faultLog(t, testConfig())
	durable := slices.Concat(appendN(t, l, 3, 2, 0, 0, 30)...)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 2, 2, 0, 0, 30)
	e.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: logSuffix, Count: 1})
	if err := l.Flush(); !errors.Is(err, ErrStorage) {
		t.Fatalf("Flush with failing fsync: %v", err)
	}
	if l.FlushedOffset() != 6 {
		t.Fatalf("FlushedOffset %d after failed fsync, want 6", l.FlushedOffset())
	}
	expectOffline(t, l, durable)
	if err := l.Flush(); !errors.Is(err, ErrStorage) {
		t.Fatalf("second Flush: %v", err) // no retry of a failed fsync
	}
	l.Close()
	l2, got := reopenOn(t, mem.CrashClone())
	defer l2.Close()
	if !bytes.Equal(got, durable) || l2.LogEndOffset() != 6 {
		t.Fatalf("after crash: LEO %d, %d bytes", l2.LogEndOffset(), len(got))
	}
}

func TestFaultShortWrite(t *testing.T) {
	for _, truncateFails := range []bool{false, true} {
		l, e, mem := faultLog(t, testConfig())
		written := slices.Concat(appendN(t, l, 4, 2, 0, 0, 30)...)
		sizeBefore := fileSize(t, mem, 0)
		e.Inject(errorfs.Rule{Op: errorfs.OpWrite, PathContains: logSuffix, Count: 1, ShortBytes: 30})
		if truncateFails {
			e.Inject(errorfs.Rule{Op: errorfs.OpTruncate, PathContains: logSuffix, Count: 1})
		}
		if _, err := l.Append(testBatch{base: 8, records: 2, valueSize: 30}.build()); !errors.Is(err, ErrStorage) {
			t.Fatalf("short write: %v", err)
		}
		want := sizeBefore
		if truncateFails {
			want += 30 // the torn bytes stay until recovery
		}
		if got := fileSize(t, mem, 0); got != want {
			t.Fatalf("truncateFails=%v: segment size %d, want %d", truncateFails, got, want)
		}
		l.Flush()
		if b, err := l.Read(6, 1<<20, true); err == nil && len(headers(t, b)) != 1 {
			t.Fatalf("read at the tail served %d batches", len(headers(t, b)))
		}
		l.Close()
		l2, got := reopenOn(t, mem)
		if !bytes.Equal(got, written) || l2.LogEndOffset() != 8 || fileSize(t, mem, 0) != sizeBefore {
			t.Fatalf("truncateFails=%v: after restart LEO %d, %d bytes, file %d",
				truncateFails, l2.LogEndOffset(), len(got), fileSize(t, mem, 0))
		}
		l2.Close()
	}
}

func TestFaultDiskFull(t *testing.T) {
	l, e, mem := faultLog(t, testConfig())
	one := len(testBatch{base: 0, records: 2, valueSize: 30}.build())
	e.SetSpace(int64(3*one + one/2))
	var ok [][]byte
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		b := testBatch{base: l.LogEndOffset(), records: 2, valueSize: 30}.build()
		if _, err = l.Append(b); err == nil {
			ok = append(ok, b)
		}
	}
	if !errors.Is(err, ErrStorage) || !errors.Is(err, syscall.ENOSPC) || len(ok) != 3 {
		t.Fatalf("after %d batches: %v", len(ok), err)
	}
	expectOffline(t, l, nil)
	l.Close()
	e.SetSpace(-1) // space returns; a restart brings the partition back
	l2 := openTest(t, faultDir, testConfig(), Options{FS: e})
	if got := readAll(t, l2); !bytes.Equal(got, slices.Concat(ok...)) {
		t.Fatalf("after restart: %d bytes", len(got))
	}
	appendN(t, l2, 2, 2, 0, 0, 30)
	l2.Close()
	_ = mem
}

func TestFaultCrashKeepsSynced(t *testing.T) {
	// Default policy: only what Flush (or a roll's background flush) made
	// durable survives a power loss.
	l, _, mem := faultLog(t, testConfig())
	durable := slices.Concat(appendN(t, l, 5, 2, 1, 0, 30)...)
	l.Flush()
	appendN(t, l, 5, 2, 2, 0, 30)
	l2, got := reopenOn(t, mem.CrashClone())
	if !bytes.Equal(got, durable) || !slices.Equal(l2.EpochEntries(), []EpochEntry{{1, 0}}) {
		t.Fatalf("crash: %d bytes, epochs %v", len(got), l2.EpochEntries())
	}
	l2.Close()
	l.Close()

	// flush.interval.messages=1: every append acknowledged after
	// WaitFlushed survives, across rolls (new segment files and their
	// directory entries).
	cfg := testConfig()
	cfg.FlushIntervalMessages = 1
	l, _, mem = faultLog(t, cfg)
	var all []byte
	for range 60 {
		b := appendN(t, l, 1, 2, 0, 0, 300)[0]
		if err := l.WaitFlushed(l.LogEndOffset()); err != nil { // the ack
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	if len(l.SegmentBaseOffsets()) < 2 {
		t.Fatal("expected a roll")
	}
	l2, got = reopenOn(t, mem.CrashClone())
	if !bytes.Equal(got, all) {
		t.Fatalf("crash with flush.interval.messages=1: %d of %d bytes", len(got), len(all))
	}
	l2.Close()
	l.Close()
}

// TestFaultCrashWithRecoveryPoint: group commits fsync only segment data,
// so RecoveryPoint lags FlushedOffset until a full flush; an unclean open
// from it rebuilds the active segment's indexes and loses no acknowledged
// batch.
func TestFaultCrashWithRecoveryPoint(t *testing.T) {
	cfg := testConfig()
	cfg.FlushIntervalMessages = 1
	l, _, mem := faultLog(t, cfg)
	var all []byte
	for range 40 {
		b := appendN(t, l, 1, 2, 0, 0, 300)[0]
		if err := l.WaitFlushed(l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	// Let the roll-triggered background flushes finish, then commit more.
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if rp := l.RecoveryPoint(); rp != l.LogEndOffset() {
		t.Fatalf("RecoveryPoint %d after Flush, LEO %d", rp, l.LogEndOffset())
	}
	// A background flush kicked by a roll before Flush can still run
	// after these commits on a busy machine and pass the recovery point
	// over them: then commit again, until a group commit is the last
	// flush.
	var rp int64
	for attempt := 0; ; attempt++ {
		for range 3 {
			b := appendN(t, l, 1, 2, 0, 0, 300)[0]
			if err := l.WaitFlushed(l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		// The recovery point may lie inside the active segment: recovery
		// starts at the segment holding it, whose indexes it rebuilds.
		rp = l.RecoveryPoint()
		if rp < l.LogEndOffset() && l.FlushedOffset() == l.LogEndOffset() {
			break
		}
		if attempt == 10 {
			t.Fatalf("RecoveryPoint %d, flushed %d, LEO %d", rp, l.FlushedOffset(), l.LogEndOffset())
		}
	}
	crashed := mem.CrashClone()
	l2 := openTest(t, faultDir, testConfig(), Options{FS: crashed, RecoveryPoint: rp})
	defer l2.Close()
	if got := readAll(t, l2); !bytes.Equal(got, all) {
		t.Fatalf("after crash: %d of %d bytes", len(got), len(all))
	}
	l.Close()
}

// TestFaultTruncationSurvivesCrash: batches removed by TruncateTo do not
// come back after a power loss, nor do the segments it deleted.
func TestFaultTruncationSurvivesCrash(t *testing.T) {
	l, _, mem := faultLog(t, testConfig())
	batches := appendN(t, l, 60, 2, 0, 0, 300)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(l.SegmentBaseOffsets()) < 3 {
		t.Fatal("want several segments")
	}
	if err := l.TruncateTo(21); err != nil { // inside the batch at 20
		t.Fatal(err)
	}
	l2, got := reopenOn(t, mem.CrashClone())
	defer l2.Close()
	if !bytes.Equal(got, slices.Concat(batches[:10]...)) || l2.LogEndOffset() != 20 {
		t.Fatalf("after crash: LEO %d, %d bytes: truncated data came back", l2.LogEndOffset(), len(got))
	}
	l.Close()
}

// TestFaultRollFails: an Append whose batches span a roll, with the new
// segment refused by the file system (EACCES), keeps the batches written
// before the roll (the log end offset covers them) and stays writable:
// nothing was written for the roll, which the next Append retries
// (TestFaultRetryableNegativeControl: fatal, it stays offline).
func TestFaultRollFails(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	l, e, mem := faultLog(t, cfg)
	first := testBatch{base: 0, records: 2, valueSize: 200}.build()
	second := testBatch{base: 2, records: 2, valueSize: 200}.build()
	third := testBatch{base: 4, records: 2, valueSize: 200}.build() // does not fit: roll
	e.Inject(errorfs.Rule{Op: errorfs.OpOpen, PathContains: "00000000000000000004.log", Err: syscall.EACCES})
	_, err := l.Append(slices.Concat(first, second, third))
	if !errors.Is(err, ErrStorage) {
		t.Fatalf("Append across a failing roll: %v (segments %v, injected %v)", err, l.SegmentBaseOffsets(), e.Injected())
	}
	if l.LogEndOffset() != 4 {
		t.Fatalf("LEO %d, want 4 (the batches before the roll)", l.LogEndOffset())
	}
	// Nothing was written for the failed roll: the log stays writable,
	// and the roll is retried by the next Append once the cause is gone.
	if err := l.Offline(); err != nil {
		t.Fatalf("offline after a failed roll: %v", err)
	}
	if _, err := l.Append(third); !errors.Is(err, ErrStorage) {
		t.Fatalf("Append while the roll still fails: %v", err)
	}
	e.Clear()
	if _, err := l.Append(third); err != nil {
		t.Fatalf("Append once the roll can succeed: %v (segments %v)", err, l.SegmentBaseOffsets())
	}
	if got := l.RetryableFailures(); got != 2 {
		t.Errorf("%d retryable failures, want 2", got)
	}
	l.Close()
	l2, got := reopenOn(t, mem)
	defer l2.Close()
	if !bytes.Equal(got, slices.Concat(first, second, third)) {
		t.Fatalf("after restart: %d bytes", len(got))
	}
}

// A write refused for lack of space leaves the log writable once the
// segment is cut back; once space is freed the next Append succeeds and
// everything acknowledged is read back, before and after a restart. A
// failed fsync still takes the log offline (TestFaultFsyncFails...).
func TestFaultNoSpaceThenFreed(t *testing.T) {
	cfg := testConfig()
	l, e, mem := faultLog(t, cfg)
	testNoSpaceThenFreed(t, l, e, mem)
}

// Negative controls: with every storage failure fatal (no retry), the
// log stays offline after space is freed, and after a failed roll is
// possible again.
func TestFaultRetryableNegativeControl(t *testing.T) {
	open := func() (*Log, *errorfs.FS) {
		mem := errorfs.NewMem()
		e := errorfs.Wrap(mem)
		cfg := testConfig()
		cfg.SegmentBytes = 1000
		return openTest(t, faultDir, cfg, Options{FS: e, private: knobs{storageFailuresFatal: true}}), e
	}
	l, e := open()
	if _, err := l.Append(testBatch{base: 0, records: 2, valueSize: 200}.build()); err != nil {
		t.Fatal(err)
	}
	e.SetSpace(100)
	l.Append(testBatch{base: 2, records: 2, valueSize: 200}.build())
	e.SetSpace(-1)
	if _, err := l.Append(testBatch{base: 2, records: 2, valueSize: 200}.build()); !errors.Is(err, ErrStorage) || l.Offline() == nil {
		t.Fatalf("ENOSPC, fatal: Append after space is freed: %v (offline %v)", err, l.Offline())
	}
	l.Close()
	l, e = open()
	batches := slices.Concat(testBatch{base: 0, records: 2, valueSize: 200}.build(), testBatch{base: 2, records: 2, valueSize: 200}.build())
	if _, err := l.Append(batches); err != nil {
		t.Fatal(err)
	}
	e.Inject(errorfs.Rule{Op: errorfs.OpOpen, PathContains: "00000000000000000004.log", Count: 1})
	l.Append(testBatch{base: 4, records: 2, valueSize: 200}.build())
	if _, err := l.Append(testBatch{base: 4, records: 2, valueSize: 200}.build()); !errors.Is(err, ErrStorage) || l.Offline() == nil {
		t.Fatalf("failed roll, fatal: Append once the roll could succeed: %v (offline %v)", err, l.Offline())
	}
	l.Close()
}

func testNoSpaceThenFreed(t *testing.T, l *Log, e *errorfs.FS, mem *errorfs.MemFS) {
	t.Helper()
	first := testBatch{base: 0, records: 2, valueSize: 200}.build()
	second := testBatch{base: 2, records: 2, valueSize: 200}.build()
	if _, err := l.Append(first); err != nil {
		t.Fatal(err)
	}
	e.SetSpace(100) // the next write stores 100 bytes, then ENOSPC
	if _, err := l.Append(second); !errors.Is(err, ErrStorage) {
		t.Fatalf("Append on a full disk: %v", err)
	}
	if err := l.Offline(); err != nil {
		t.Fatalf("offline after ENOSPC: %v", err)
	}
	if l.LogEndOffset() != 2 {
		t.Fatalf("LEO %d after the refused write, want 2", l.LogEndOffset())
	}
	e.SetSpace(-1) // space freed
	if _, err := l.Append(second); err != nil {
		t.Fatalf("Append after space is freed: %v", err)
	}
	if got := readAllGaps(t, l); !bytes.Equal(got, slices.Concat(first, second)) {
		t.Fatalf("read %d bytes, want both batches", len(got))
	}
	l.Close()
	l2, got := reopenOn(t, mem)
	defer l2.Close()
	if !bytes.Equal(got, slices.Concat(first, second)) {
		t.Fatalf("after restart: %d bytes", len(got))
	}
}

// TestFaultLostTailBeforeLaterSegment: the OS wrote back a later segment
// but not the end of the one before it (possible after a power loss in the
// default policy, which fsyncs rolled segments in the background). The
// index entry sealed at roll shows the hole; recovery cuts the log at it
// instead of serving the later batches after a gap.
func TestFaultLostTailBeforeLaterSegment(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	l, _, mem := faultLog(t, cfg)
	l.flusher.stop() // no background flush: the test decides what is durable
	durable := slices.Concat(appendN(t, l, 2, 2, 0, 0, 100)...)
	l.mu.Lock()
	targets, _, _ := l.segments[0].syncTargets(nil, true) // first two batches durable
	l.mu.Unlock()
	syncAll(targets)
	appendN(t, l, 6, 2, 0, 0, 100) // one more in segment 0, then rolls
	bases := l.SegmentBaseOffsets()
	if len(bases) < 2 {
		t.Fatalf("no roll: %v", bases)
	}
	// Writeback reached the later segments and the directory, not the
	// unsynced tail of segment 0.
	for _, b := range bases[1:] {
		f, err := mem.OpenFile(segmentFileName(faultDir, b, logSuffix), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Sync()
		f.Close()
	}
	mem.SyncDir(faultDir)
	l2, got := reopenOn(t, mem.CrashClone())
	defer l2.Close()
	if !bytes.Equal(got, durable) || l2.LogEndOffset() != 4 || len(l2.SegmentBaseOffsets()) != 1 {
		t.Fatalf("after crash: LEO %d, segments %v, %d bytes (want the 2 durable batches only)",
			l2.LogEndOffset(), l2.SegmentBaseOffsets(), len(got))
	}
	l.Close()
}

// TestFaultRecoveredDataIsFlushed: after a process crash the page cache
// still holds unflushed batches; recovery keeps them and reports them
// flushed, so it must fsync them: a power loss right after must not take
// them.
func TestFaultRecoveredDataIsFlushed(t *testing.T) {
	l, _, mem := faultLog(t, testConfig())
	all := slices.Concat(appendN(t, l, 30, 2, 0, 0, 200)...)
	l.Abandon() // kill -9: nothing flushed, page cache kept
	l2, got := reopenOn(t, mem)
	if !bytes.Equal(got, all) || l2.FlushedOffset() != l2.LogEndOffset() {
		t.Fatalf("restart: %d bytes, flushed %d of %d", len(got), l2.FlushedOffset(), l2.LogEndOffset())
	}
	l3, got := reopenOn(t, mem.CrashClone())
	defer l3.Close()
	if !bytes.Equal(got, all) {
		t.Fatalf("power loss after recovery: %d of %d bytes", len(got), len(all))
	}
	l2.Close()
}

// TestCloseHintsLostInCrash: Close writes the clean-shutdown marker
// without fsyncs and the recovery point with its temp file fsynced but
// not the directory, after fsyncing the data. A restart finds them and
// opens clean; a power loss right after Close loses the marker and the
// new recovery point, and the open recovers from the older one with
// every batch there. A later directory fsync (another file written in the
// directory, as a partition's producer snapshot is) makes the renames
// durable: the marker is then empty, the recovery point the new one.
func TestCloseHintsLostInCrash(t *testing.T) {
	l, _, mem := faultLog(t, testConfig())
	all := slices.Concat(appendN(t, l, 30, 2, 0, 0, 300)...) // rolls: a durable recovery point
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	l.flusher.stop() // no roll's background flush moves the recovery point from here to Close
	flushedRP := l.RecoveryPoint()
	all = append(all, slices.Concat(appendN(t, l, 5, 2, 0, 0, 300)...)...)
	leo := l.LogEndOffset()
	if flushedRP >= leo {
		t.Fatalf("recovery point %d not below the log end %d before Close", flushedRP, leo)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A restart: the marker and the new recovery point are there.
	if off, ok, _ := readCleanShutdown(mem, faultDir); !ok || off != leo {
		t.Fatalf("clean-shutdown marker after Close: %d %v, want %d", off, ok, leo)
	}
	if rp, ok, _ := readOffsetFile(mem, faultDir, recoveryPointName); !ok || rp != leo {
		t.Fatalf("recovery point after Close: %d %v, want %d", rp, ok, leo)
	}

	// afterPowerLoss checks what survives a power loss now: never the
	// marker, the recovery point wantRP, and every batch.
	afterPowerLoss := func(what string, wantRP int64) {
		t.Helper()
		crashed := mem.CrashClone()
		if _, ok, _ := readCleanShutdown(crashed, faultDir); ok {
			t.Fatalf("%s: the clean-shutdown marker survived a power loss without an fsync", what)
		}
		if rp, ok, _ := readOffsetFile(crashed, faultDir, recoveryPointName); !ok || rp != wantRP {
			t.Fatalf("%s: recovery point %d %v, want %d", what, rp, ok, wantRP)
		}
		l2, got := reopenOn(t, crashed)
		defer l2.Close()
		if !bytes.Equal(got, all) || l2.LogEndOffset() != leo {
			t.Fatalf("%s: LEO %d (want %d), %d of %d bytes", what, l2.LogEndOffset(), leo, len(got), len(all))
		}
	}
	// A power loss: both are gone, the data is not.
	afterPowerLoss("a power loss past Close", flushedRP)
	// After a directory fsync the renames are durable: the marker empty,
	// the recovery point the new one.
	if err := mem.SyncDir(faultDir); err != nil {
		t.Fatal(err)
	}
	afterPowerLoss("a directory fsync and a power loss", leo)
}
