package partition

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/minibroker/minibroker/internal/batch"
	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/psm"
	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode builds a v2 batch of n records for a producer (pid -1: none).
func encode(pid int64, epoch int16, seq int32, n int, txn bool) []byte {
	var recs []byte
	for i := 0; i < n; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte{byte(i)}}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	attrs := int16(0)
	if txn {
		attrs |= batch.AttrTransactional
	}
	rb := kmsg.RecordBatch{Magic: 2, Attributes: attrs, LastOffsetDelta: int32(n - 1), FirstTimestamp: 1000,
		MaxTimestamp: 1000, ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(n), Records: recs}
	rb.Length = int32(batch.HeaderSize - batch.LogOverhead + len(recs))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	return raw
}

// at sets a batch's base offset and epoch, as a source cluster would have.
func at(raw []byte, offset int64, epoch int32) []byte {
	raw = append([]byte(nil), raw...)
	batch.SetBaseOffset(raw, offset)
	batch.SetPartitionLeaderEpoch(raw, epoch)
	return raw
}

func open(t *testing.T, dir string) *Partition { return openOn(t, vfs.Default, dir) }

func openOn(t *testing.T, fsys vfs.FS, dir string) *Partition {
	t.Helper()
	cfg := Config{Log: mlog.DefaultConfig(), PSM: psm.Config{}, MessageMaxBytes: 1 << 20}
	p, err := Open(dir, "t", 0, cfg, Options{FS: fsys, Now: func() time.Time { return time.UnixMilli(2000) }})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAppendAsLeaderAssignsOffsetsKeepsCRC(t *testing.T) {
	p := open(t, t.TempDir())
	defer p.Close()
	for i, want := range []int64{0, 3, 6} {
		res, err := p.AppendAsLeader(encode(-1, -1, -1, 3, false))
		if err != nil || res.BaseOffset != want || res.LastOffset != want+2 {
			t.Fatalf("append %d: %+v %v", i, res, err)
		}
	}
	raw, err := p.log.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	it := batch.NewIter(raw)
	n := 0
	for b, h, ok := it.Next(); ok; b, h, ok = it.Next() {
		if _, err := batch.Validate(b); err != nil {
			t.Fatalf("batch at %d: %v", h.BaseOffset, err)
		}
		n++
	}
	if n != 3 || p.Offsets().HighWatermark != 9 {
		t.Fatalf("%d batches, hw %d", n, p.Offsets().HighWatermark)
	}
}

func TestAppendAsLeaderDuplicateAndFencing(t *testing.T) {
	p := open(t, t.TempDir())
	defer p.Close()
	first, err := p.AppendAsLeader(encode(7, 0, 0, 2, false))
	if err != nil {
		t.Fatal(err)
	}
	p.AppendAsLeader(encode(-1, -1, -1, 1, false))
	dup, err := p.AppendAsLeader(encode(7, 0, 0, 2, false))
	if err != nil || !dup.Duplicate || dup.BaseOffset != first.BaseOffset {
		t.Fatalf("retry: %+v %v", dup, err)
	}
	if _, err := p.AppendAsLeader(encode(7, 0, 5, 1, false)); !errors.Is(err, psm.ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	if _, err := p.AppendAsLeader(encode(7, 1, 0, 1, false)); err != nil {
		t.Fatalf("epoch bump: %v", err)
	}
	if _, err := p.AppendAsLeader(encode(7, 0, 2, 1, false)); !errors.Is(err, psm.ErrInvalidProducerEpoch) {
		t.Fatalf("fenced epoch: %v", err)
	}
	if p.Offsets().LogEnd != 4 {
		t.Fatalf("log end %d, want 4 (nothing appended for rejected batches)", p.Offsets().LogEnd)
	}
}

func TestClientInputValidation(t *testing.T) {
	p := open(t, t.TempDir())
	defer p.Close()
	good := encode(-1, -1, -1, 1, false)
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 1
	old := append([]byte(nil), good...)
	old[16] = 1
	ctrl := batch.EndTxnBatch(true, 1, 0, 0, 1)
	big := encode(-1, -1, -1, 40, false)
	shortLen := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(shortLen[8:], 20)
	badCount := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(badCount[57:], 2) // NumRecords 2, last offset delta 0
	binary.BigEndian.PutUint32(badCount[17:], crc32.Checksum(badCount[21:], castagnoli))
	small := *p.config()
	small.MessageMaxBytes = int32(len(ctrl) + 10)
	p.SetConfig(small)
	for _, c := range []struct {
		name string
		in   []byte
		want error
	}{
		{"crc", bad, ErrCorrupt}, {"magic", old, ErrInvalidRecord}, {"control", ctrl, ErrInvalidRecord},
		{"too large", big, ErrTooLarge}, {"empty", nil, ErrInvalidRecord}, {"truncated", good[:30], ErrInvalidRecord},
		{"shorter than a header", shortLen, ErrCorrupt}, {"count", badCount, ErrInvalidRecord},
		{"producer id without a sequence", encode(7, 0, -1, 1, false), ErrInvalidRecord},
	} {
		if _, err := p.AppendAsLeader(c.in); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if p.Offsets().LogEnd != 0 {
		t.Fatal("invalid input appended")
	}
}

func TestMirroredPartitionIsReadOnly(t *testing.T) {
	p := open(t, t.TempDir())
	defer p.Close()
	p.SetMode(Mirrored, "from-a")
	_, err := p.AppendAsLeader(encode(-1, -1, -1, 1, false))
	var me *MirroredError
	if !errors.As(err, &me) || me.Mirror != "from-a" || !errors.Is(err, ErrMirrored) {
		t.Fatalf("append to mirrored: %v", err)
	}
	if _, err := p.DeleteRecordsBefore(0); !errors.Is(err, ErrMirrored) {
		t.Fatalf("delete records on mirrored: %v", err)
	}
}

// Mirrored batches keep their offsets and bytes; refetched batches are
// skipped; a batch straddling the log end is refused.
func TestAppendAsMirror(t *testing.T) {
	p := open(t, t.TempDir())
	defer p.Close()
	b0, b1 := at(encode(5, 0, 0, 3, false), 0, 0), at(encode(5, 0, 3, 2, false), 3, 0)
	n, err := p.AppendAsMirror(append(append([]byte(nil), b0...), b1...))
	if err != nil || n != 2 {
		t.Fatalf("mirror append: %d %v", n, err)
	}
	if n, err := p.AppendAsMirror(b1); err != nil || n != 0 {
		t.Fatalf("refetch: %d %v", n, err)
	}
	straddle := at(encode(5, 0, 5, 4, false), 4, 0)
	if _, err := p.AppendAsMirror(straddle); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("straddle: %v", err)
	}
	raw, _ := p.log.Read(0, 1<<20, true)
	if string(raw) != string(b0)+string(b1) {
		t.Fatal("mirrored bytes changed")
	}
	if e, ok := p.psm.Entry(5); !ok || e.Batches[len(e.Batches)-1].LastSeq != 4 {
		t.Fatalf("producer state not updated from mirrored data: %+v", e)
	}
}

// The barrier goes at an epoch above every epoch in the log, clears every
// producer entry, and later local writes use its epoch.
func TestWriteBarrier(t *testing.T) {
	p := open(t, t.TempDir())
	defer p.Close()
	p.AppendAsMirror(at(encode(5, 0, 0, 2, false), 0, 3))
	if p.psm.Len() != 1 {
		t.Fatal("no producer state before the barrier")
	}
	off, err := p.WriteBarrier("cluster-A")
	if err != nil || off != 2 {
		t.Fatalf("barrier: %d %v", off, err)
	}
	if p.psm.Len() != 0 {
		t.Fatalf("barrier left %d producer entries", p.psm.Len())
	}
	if e := p.LeaderEpoch(); e != 4 {
		t.Fatalf("epoch after barrier %d, want 4", e)
	}
	res, err := p.AppendAsLeader(encode(5, 0, 0, 2, false))
	if err != nil || res.Duplicate || res.BaseOffset != 3 {
		t.Fatalf("colliding producer after barrier: %+v %v", res, err)
	}
	raw, _ := p.log.Read(3, 1<<20, true)
	h, _ := batch.ParseHeader(raw)
	if h.PartitionLeaderEpoch != 4 {
		t.Fatalf("local write at epoch %d", h.PartitionLeaderEpoch)
	}
}

// A barrier met while rebuilding producer state after a crash clears it
// exactly as a live append does; without it the state survives.
func TestBarrierDuringRecovery(t *testing.T) {
	for _, withBarrier := range []bool{true, false} {
		dir := t.TempDir()
		p := open(t, dir)
		p.AppendAsMirror(at(encode(5, 0, 0, 2, false), 0, 0))
		if withBarrier {
			p.WriteBarrier("A")
		}
		p.Abandon() // crash: no snapshot at close
		snaps, _ := filepath.Glob(filepath.Join(dir, "*.snapshot"))
		for _, s := range snaps {
			os.Remove(s)
		}
		p = open(t, dir)
		_, tracked := p.psm.Entry(5)
		p.Close()
		if tracked == withBarrier {
			t.Fatalf("barrier=%v: producer 5 tracked after recovery = %v", withBarrier, tracked)
		}
	}
}

// memDir is the partition directory of openMem's partitions.
const memDir = "/data/t-0"

// openMem opens a partition on an in-memory file system that can model a
// power loss (errorfs.MemFS.CrashClone).
func openMem(t *testing.T) (*errorfs.MemFS, *Partition) {
	t.Helper()
	mem := errorfs.NewMem()
	if err := mem.MkdirAll(memDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return mem, openOn(t, mem, memDir)
}

// appendSeqs appends one single-record batch per sequence in [from, to)
// for producer pid, epoch 0.
func appendSeqs(t *testing.T, p *Partition, pid int64, from, to int32) {
	t.Helper()
	for seq := from; seq < to; seq++ {
		if _, err := p.AppendAsLeader(encode(pid, 0, seq, 1, false)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStaleSnapshotAboveRecoveredEnd: a power loss can keep a producer
// snapshot (written at a roll or at Close) and lose the log tail it
// describes. Open deletes snapshots above the recovered log end, as
// Kafka's ProducerStateManager does; otherwise, once the log grew past
// that offset again, a later open would load the stale state: here it
// loses a producer whose retry is then appended twice.
func TestStaleSnapshotAboveRecoveredEnd(t *testing.T) {
	mem, p := openMem(t)
	appendSeqs(t, p, 7, 0, 5)
	if err := p.log.Flush(); err != nil {
		t.Fatal(err)
	}
	appendSeqs(t, p, 7, 5, 10)
	// The snapshot at 10 reaches the disk, the records 5..9 do not.
	if err := p.psm.WriteSnapshot(mem, memDir, 10); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone()
	p.Abandon()

	p = openOn(t, crashed, memDir)
	if end := p.Offsets().LogEnd; end != 5 {
		t.Fatalf("log end %d after the power loss, want 5", end)
	}
	// Another producer fills the log to 10 again; then a crash.
	appendSeqs(t, p, 8, 0, 5)
	if err := p.log.Flush(); err != nil {
		t.Fatal(err)
	}
	p.Abandon()

	p = openOn(t, crashed, memDir)
	defer p.Close()
	res, err := p.AppendAsLeader(encode(8, 0, 4, 1, false)) // producer 8 retries its last batch
	if err != nil || !res.Duplicate {
		t.Fatalf("producer 8's retry after reopening: %+v %v, want a duplicate (a stale snapshot was loaded)", res, err)
	}
}

// TestCloseSnapshotLostInCrash: Close writes the producer snapshot
// without an fsync. A restart loads it; a power loss right after Close
// loses it, and the log's replay rebuilds the same state.
func TestCloseSnapshotLostInCrash(t *testing.T) {
	mem, p := openMem(t)
	appendSeqs(t, p, 7, 0, 5)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	snapshot := filepath.Join(memDir, psm.SnapshotFileName(5))
	if _, err := mem.Stat(snapshot); err != nil {
		t.Fatalf("no snapshot at the log end after Close: %v", err)
	}
	crashed := mem.CrashClone()
	if data, err := vfs.ReadFile(crashed, snapshot); err == nil && len(data) > 0 {
		t.Fatal("the close snapshot's bytes survived a power loss without an fsync")
	}
	for name, fsys := range map[string]vfs.FS{"restart": mem, "power loss": crashed} {
		p := openOn(t, fsys, memDir)
		res, err := p.AppendAsLeader(encode(7, 0, 4, 1, false))
		p.Close()
		if err != nil || !res.Duplicate {
			t.Fatalf("%s: producer 7's retry: %+v %v, want a duplicate", name, res, err)
		}
	}
}

func TestTruncateRebuildsProducerState(t *testing.T) {
	dir := t.TempDir()
	p := open(t, dir)
	defer p.Close()
	for seq := int32(0); seq < 10; seq += 2 {
		if _, err := p.AppendAsLeader(encode(9, 0, seq, 2, false)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	e, ok := p.psm.Entry(9)
	if !ok || e.Batches[len(e.Batches)-1].LastSeq != 5 {
		t.Fatalf("after truncation to 6: %+v", e)
	}
	if o := p.Offsets(); o.LogEnd != 6 || o.HighWatermark != 6 {
		t.Fatalf("offsets %+v", o)
	}
	// The producer continues from sequence 6 again.
	if _, err := p.AppendAsLeader(encode(9, 0, 6, 2, false)); err != nil {
		t.Fatalf("continue after truncation: %v", err)
	}
}

func TestTransactionsLSOAndAborted(t *testing.T) {
	p := open(t, t.TempDir())
	defer p.Close()
	p.AppendAsLeader(encode(-1, -1, -1, 2, false)) // 0,1
	p.AppendAsLeader(encode(11, 0, 0, 3, true))    // 2..4 open txn
	p.AppendAsLeader(encode(-1, -1, -1, 1, false)) // 5
	if o := p.Offsets(); o.LastStable != 2 || o.HighWatermark != 6 {
		t.Fatalf("open txn: %+v", o)
	}
	if r, _ := p.Read(0, 1<<20, true, true); len(r.Records) == 0 {
		t.Fatal("read_committed returned nothing below the LSO")
	}
	if r, _ := p.Read(2, 1<<20, true, true); len(r.Records) != 0 {
		t.Fatal("read_committed read past the LSO")
	}
	if _, err := p.WriteMarker(11, 0, false, 0); err != nil {
		t.Fatal(err)
	}
	o := p.Offsets()
	if o.LastStable != o.HighWatermark || o.HighWatermark != 7 {
		t.Fatalf("after abort: %+v", o)
	}
	r, err := p.Read(0, 1<<20, true, true)
	if err != nil || len(r.Aborted) != 1 || r.Aborted[0].ProducerID != 11 || r.Aborted[0].FirstOffset != 2 {
		t.Fatalf("aborted txns: %+v %v", r.Aborted, err)
	}
}

// With log.flush.interval.messages=1 the high watermark never passes
// fsynced data, for mirrored appends as for client ones.
func TestHighWatermarkWaitsForFsyncWhenDurable(t *testing.T) {
	cfg := Config{Log: mlog.DefaultConfig(), MessageMaxBytes: 1 << 20}
	cfg.Log.FlushIntervalMessages = 1
	p, err := Open(t.TempDir(), "t", 0, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.AppendAsMirror(at(encode(5, 0, 0, 3, false), 0, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(encode(-1, -1, -1, 2, false)); err != nil {
		t.Fatal(err)
	}
	if hw, flushed := p.Offsets().HighWatermark, p.log.FlushedOffset(); hw != 5 || flushed < hw {
		t.Fatalf("high watermark %d, flushed %d", hw, flushed)
	}
}

// An empty partition's Close writes no producer snapshot (it would hold
// nothing the next open lacks), and the next open still works; once a
// producer has appended, Close snapshots its state at the log end and the
// open after it keeps the producer's sequence (a retry is a duplicate).
func TestCloseSnapshotsOnlyProducerState(t *testing.T) {
	dir := t.TempDir()
	snapshots := func() []string {
		s, _ := filepath.Glob(filepath.Join(dir, "*.snapshot"))
		return s
	}
	p := open(t, dir)
	p.Close()
	if s := snapshots(); len(s) != 0 {
		t.Fatalf("an empty partition's close wrote %v", s)
	}
	p = open(t, dir)
	if _, err := p.AppendAsLeader(encode(7, 0, 0, 2, false)); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if s := snapshots(); len(s) != 1 || filepath.Base(s[0]) != psm.SnapshotFileName(2) {
		t.Fatalf("snapshots after a producer's append: %v", s)
	}
	p = open(t, dir)
	defer p.Close()
	if dup, err := p.AppendAsLeader(encode(7, 0, 0, 2, false)); err != nil || !dup.Duplicate {
		t.Fatalf("retry after the restart: %+v %v", dup, err)
	}
}
