package psm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/vfs"
)

// Producer-state snapshots follow Kafka's scheme: the file
// DIR/<offset, 20 digits>.snapshot holds the state of every producer after
// applying all batches below offset, so recovery loads the newest one at or
// below the log end and replays the log from offset on.
//
// The format is minibroker's own (big endian):
//
//	offset  width  field
//	     0      4  Magic "MBPS" (0x4D 0x42 0x50 0x53)
//	     4      2  Version (1)
//	     6      4  CRC-32C (Castagnoli) of bytes 10..end
//	    10      8  Offset (must equal the file name's)
//	    18      4  ProducerCount
//	    22      …  ProducerCount producers, ascending producer id:
//
//	               0   8  ProducerID (>= 0)
//	               8   2  Epoch
//	              10   4  CoordinatorEpoch
//	              14   8  CurrentTxnFirstOffset (-1: no open transaction)
//	              22   8  LastTimestamp
//	              30   1  BatchCount (0..5)
//	              31   …  BatchCount batches, oldest first, 32 bytes each:
//	                        0  4  FirstSeq
//	                        4  4  LastSeq
//	                        8  8  FirstOffset
//	                       16  8  LastOffset
//	                       24  8  Timestamp
//
// Unlike Kafka's snapshot (one batch per producer), every retained batch
// is kept, so deduplication works across a restart exactly as before it.
const (
	snapshotMagic     = 0x4D425053
	snapshotVersion   = 1
	snapshotHeaderLen = 22
	snapshotCRCStart  = 10
	snapshotEntryLen  = 31
	snapshotBatchLen  = 32
	// SnapshotSuffix is the extension of producer-state snapshot files.
	SnapshotSuffix = ".snapshot"
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// SnapshotFileName is the base name of the snapshot at offset.
func SnapshotFileName(offset int64) string {
	return fmt.Sprintf("%020d%s", offset, SnapshotSuffix)
}

// ParseSnapshotFileName returns the offset of a snapshot file name.
func ParseSnapshotFileName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, SnapshotSuffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || off < 0 {
		return 0, false
	}
	return off, true
}

// encodeSnapshot serializes entries (sorted by producer id) at offset.
func encodeSnapshot(offset int64, entries []*entryState) []byte {
	size := snapshotHeaderLen
	for _, e := range entries {
		size += snapshotEntryLen + e.numBatches*snapshotBatchLen
	}
	b := make([]byte, snapshotHeaderLen, size)
	be := binary.BigEndian
	be.PutUint32(b[0:], snapshotMagic)
	be.PutUint16(b[4:], snapshotVersion)
	be.PutUint64(b[10:], uint64(offset))
	be.PutUint32(b[18:], uint32(len(entries)))
	for _, e := range entries {
		b = be.AppendUint64(b, uint64(e.producerID))
		b = be.AppendUint16(b, uint16(e.epoch))
		b = be.AppendUint32(b, uint32(e.coordinatorEpoch))
		b = be.AppendUint64(b, uint64(e.txnFirstOffset))
		b = be.AppendUint64(b, uint64(e.lastTimestamp))
		b = append(b, byte(e.numBatches))
		for _, bm := range e.batches[:e.numBatches] {
			b = be.AppendUint32(b, uint32(bm.FirstSeq))
			b = be.AppendUint32(b, uint32(bm.LastSeq))
			b = be.AppendUint64(b, uint64(bm.FirstOffset))
			b = be.AppendUint64(b, uint64(bm.LastOffset))
			b = be.AppendUint64(b, uint64(bm.Timestamp))
		}
	}
	be.PutUint32(b[6:], crc32.Checksum(b[snapshotCRCStart:], crc32c))
	return b
}

// encodeSnapshot serializes the manager's producers at offset.
func (m *Manager) encodeSnapshot(offset int64) []byte {
	entries := make([]*entryState, 0, len(m.producers))
	for _, e := range m.producers {
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].producerID < entries[j].producerID })
	return encodeSnapshot(offset, entries)
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorruptSnapshot, fmt.Sprintf(format, args...))
}

// DecodeSnapshot decodes a snapshot file's bytes. Every failed check
// returns an error wrapping ErrCorruptSnapshot.
func DecodeSnapshot(b []byte) ([]Entry, error) {
	_, entries, err := decodeSnapshot(b)
	return entries, err
}

func decodeSnapshot(b []byte) (int64, []Entry, error) {
	be := binary.BigEndian
	if len(b) < snapshotHeaderLen {
		return 0, nil, corrupt("%d bytes, shorter than the header", len(b))
	}
	if magic := be.Uint32(b); magic != snapshotMagic {
		return 0, nil, corrupt("bad magic %#x", magic)
	}
	if v := be.Uint16(b[4:]); v != snapshotVersion {
		return 0, nil, corrupt("unknown version %d", v)
	}
	if want, got := be.Uint32(b[6:]), crc32.Checksum(b[snapshotCRCStart:], crc32c); want != got {
		return 0, nil, corrupt("CRC %#x, computed %#x", want, got)
	}
	offset := int64(be.Uint64(b[10:]))
	if offset < 0 {
		return 0, nil, corrupt("negative offset %d", offset)
	}
	count := int(be.Uint32(b[18:]))
	rest := b[snapshotHeaderLen:]
	if count < 0 || count > len(rest)/snapshotEntryLen {
		return 0, nil, corrupt("%d producers in %d bytes", count, len(rest))
	}
	entries := make([]Entry, 0, count)
	for i := 0; i < count; i++ {
		if len(rest) < snapshotEntryLen {
			return 0, nil, corrupt("producer %d truncated", i)
		}
		e := Entry{
			ProducerID:            int64(be.Uint64(rest[0:])),
			Epoch:                 int16(be.Uint16(rest[8:])),
			CoordinatorEpoch:      int32(be.Uint32(rest[10:])),
			CurrentTxnFirstOffset: int64(be.Uint64(rest[14:])),
			LastTimestamp:         int64(be.Uint64(rest[22:])),
		}
		n := int(rest[30])
		rest = rest[snapshotEntryLen:]
		switch {
		case e.ProducerID < 0:
			return 0, nil, corrupt("producer id %d", e.ProducerID)
		case i > 0 && e.ProducerID <= entries[i-1].ProducerID:
			return 0, nil, corrupt("producer ids out of order at %d", e.ProducerID)
		case e.CurrentTxnFirstOffset < -1:
			return 0, nil, corrupt("producer %d: transaction offset %d", e.ProducerID, e.CurrentTxnFirstOffset)
		case n > NumBatchesToRetain:
			return 0, nil, corrupt("producer %d: %d batches", e.ProducerID, n)
		case len(rest) < n*snapshotBatchLen:
			return 0, nil, corrupt("producer %d: batches truncated", e.ProducerID)
		}
		if n > 0 {
			e.Batches = make([]BatchMeta, n)
			for j := range e.Batches {
				e.Batches[j] = BatchMeta{
					FirstSeq:    int32(be.Uint32(rest[0:])),
					LastSeq:     int32(be.Uint32(rest[4:])),
					FirstOffset: int64(be.Uint64(rest[8:])),
					LastOffset:  int64(be.Uint64(rest[16:])),
					Timestamp:   int64(be.Uint64(rest[24:])),
				}
				rest = rest[snapshotBatchLen:]
			}
		}
		entries = append(entries, e)
	}
	if len(rest) != 0 {
		return 0, nil, corrupt("%d trailing bytes", len(rest))
	}
	return offset, entries, nil
}

// WriteSnapshot writes the manager's state as the snapshot at offset,
// atomically (temp file, fsync, rename, directory fsync).
func (m *Manager) WriteSnapshot(fsys vfs.FS, dir string, offset int64) error {
	return m.writeSnapshot(fsys, dir, offset, true)
}

// WriteSnapshotNoSync is WriteSnapshot without the fsyncs (vfs.ReplaceFile),
// for a partition's close. A power loss can lose the file or leave it
// empty or torn: LoadLatestSnapshot deletes such a file and takes an older
// snapshot, from which the log is replayed, so its loss costs only time.
// One that outlives the log tail it describes is above the recovered log
// end, where the partition's open deletes it (DeleteSnapshotsAfter).
func (m *Manager) WriteSnapshotNoSync(fsys vfs.FS, dir string, offset int64) error {
	return m.writeSnapshot(fsys, dir, offset, false)
}

// Snapshot is the manager's state at an offset, encoded, to be written
// later (WriteFile) without the manager: a partition takes it under its
// append lock at a roll and fsyncs it after releasing the lock.
type Snapshot struct {
	Offset int64
	data   []byte
}

// TakeSnapshot encodes the manager's state as the snapshot at offset.
func (m *Manager) TakeSnapshot(offset int64) Snapshot {
	return Snapshot{Offset: offset, data: m.encodeSnapshot(offset)}
}

// WriteFile writes s in dir as WriteSnapshot does (temp file, fsync,
// rename, directory fsync).
func (s Snapshot) WriteFile(fsys vfs.FS, dir string) error {
	return writeSnapshotData(fsys, dir, s.Offset, s.data, true)
}

// WriteFileNoSync writes s in dir as WriteSnapshotNoSync does (temp file
// renamed, no fsync) and returns the file's path, for SyncFile later: a
// partition writes its roll snapshots so on the produce path and fsyncs
// them in the log's background flush, as Kafka's UnifiedLog.roll does
// (takeSnapshot(false), then flushProducerStateSnapshot in its flush-log
// task). Until then a power loss can lose the file or leave it empty or
// torn, which LoadLatestSnapshot handles (see WriteSnapshotNoSync).
func (s Snapshot) WriteFileNoSync(fsys vfs.FS, dir string) (string, error) {
	return filepath.Join(dir, SnapshotFileName(s.Offset)), writeSnapshotData(fsys, dir, s.Offset, s.data, false)
}

// SyncFile fsyncs the snapshot file at path (written by WriteFileNoSync).
// The caller fsyncs the directory.
func SyncFile(fsys vfs.FS, path string) error {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	serr := f.Sync()
	if cerr := f.Close(); serr == nil {
		serr = cerr
	}
	return serr
}

func (m *Manager) writeSnapshot(fsys vfs.FS, dir string, offset int64, durable bool) error {
	return writeSnapshotData(fsys, dir, offset, m.encodeSnapshot(offset), durable)
}

func writeSnapshotData(fsys vfs.FS, dir string, offset int64, data []byte, durable bool) error {
	path := filepath.Join(dir, SnapshotFileName(offset))
	var err error
	if durable {
		err = vfs.WriteFileAtomic(fsys, dir, path, data)
	} else {
		err = vfs.ReplaceFile(fsys, path, data)
	}
	if err != nil {
		return fmt.Errorf("write producer snapshot at %d: %w", offset, err)
	}
	return nil
}

// SnapshotOffsets lists the offsets of the snapshot files in dir, ascending.
// A missing directory has none.
func SnapshotOffsets(fsys vfs.FS, dir string) ([]int64, error) {
	des, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list producer snapshots: %w", err)
	}
	var out []int64
	for _, de := range des {
		if de.IsDir() {
			continue
		}
		if off, ok := ParseSnapshotFileName(de.Name()); ok {
			out = append(out, off)
		}
	}
	slices.Sort(out)
	return out, nil
}

// LoadLatestSnapshot builds a manager from the newest valid snapshot at or
// below maxOffset. A corrupt snapshot is logged, counted, deleted (as
// Kafka does) and skipped for an older one. With none, it returns an empty
// manager and 0. The manager's LastOffset is the snapshot's offset: the
// caller replays the log from there with OriginReplication. Expired
// producers are kept; call RemoveExpired with the current time.
func LoadLatestSnapshot(fsys vfs.FS, dir string, maxOffset int64, cfg Config, logger *zap.Logger, metrics *Metrics) (*Manager, int64, error) {
	m := NewManager(cfg, logger, metrics)
	offsets, err := SnapshotOffsets(fsys, dir)
	if err != nil {
		return nil, 0, err
	}
	for i := len(offsets) - 1; i >= 0; i-- {
		off := offsets[i]
		if off > maxOffset {
			continue
		}
		path := filepath.Join(dir, SnapshotFileName(off))
		data, err := vfs.ReadFile(fsys, path)
		if err != nil {
			return nil, 0, fmt.Errorf("read producer snapshot %s: %w", path, err)
		}
		fileOffset, entries, err := decodeSnapshot(data)
		if err == nil && fileOffset != off {
			err = corrupt("offset %d in a file named for %d", fileOffset, off)
		}
		if err != nil {
			m.logger.Warn("psm: skipping corrupt producer snapshot", zap.String("path", path), zap.Error(err))
			if metrics != nil {
				metrics.CorruptSnapshots.Inc()
			}
			if rmErr := fsys.Remove(path); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
				return nil, 0, fmt.Errorf("remove corrupt producer snapshot %s: %w", path, rmErr)
			}
			continue
		}
		m.loadEntries(entries)
		m.mapEnd = off
		return m, off, nil
	}
	return m, 0, nil
}

// DeleteSnapshotsAfter removes the snapshots above offset (truncation of
// the log to offset).
func DeleteSnapshotsAfter(fsys vfs.FS, dir string, offset int64) error {
	return deleteSnapshots(fsys, dir, func(off int64) bool { return off > offset })
}

// DeleteSnapshotsBefore removes the snapshots below offset (retention: pass
// the base offset of the oldest segment kept, which keeps that segment's
// snapshot and every later one).
func DeleteSnapshotsBefore(fsys vfs.FS, dir string, offset int64) error {
	return deleteSnapshots(fsys, dir, func(off int64) bool { return off < offset })
}

func deleteSnapshots(fsys vfs.FS, dir string, match func(int64) bool) error {
	offsets, err := SnapshotOffsets(fsys, dir)
	if err != nil {
		return err
	}
	removed := false
	for _, off := range offsets {
		if !match(off) {
			continue
		}
		path := filepath.Join(dir, SnapshotFileName(off))
		if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete producer snapshot %s: %w", path, err)
		}
		removed = true
	}
	if removed {
		if err := fsys.SyncDir(dir); err != nil {
			return fmt.Errorf("sync %s: %w", dir, err)
		}
	}
	return nil
}
