package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/minibroker/minibroker/internal/vfs"
)

// The transaction log: minibroker's __transaction_state. One append-only
// file in the data directory; every transition of a transactional id is a
// record holding the id's whole state (the last record for an id wins), and
// each append is fsynced before the request that caused it is answered, and
// a decision before any of its markers is written (concurrent requests
// share fsyncs) — except that nothing waits for the
// CompleteCommit/CompleteAbort record: losing it in a crash only makes the
// next start write the transaction's markers again, which is harmless, and
// the next fsync makes it durable anyway.
//
// A start that finds no file does not create one: the first append does
// (as Kafka creates __transaction_state on the first transactional
// request), so a broker that never sees a transaction writes nothing here
// and its start-up saves a file and two fsyncs. No marker can be written
// before that first append is durable, so a crash before it leaves nothing
// that the epoch (0 again on the next start) must be above.
//
// File:
//
//	0  4  magic "MBTX"
//	4  2  version (1)
//	6  2  reserved (0)
//	8  …  records
//
// Record:
//
//	0  4  body length N (big endian)
//	4  4  CRC-32C (Castagnoli) of the body
//	8  N  body
//
// Body, type 1 (transactional id state):
//
//	0  1  type (1)
//	1  2  length L of the transactional id; L bytes of it
//	   8  producer id
//	   8  last producer id (-1: none)
//	   2  producer epoch
//	   2  last producer epoch (-1: none)
//	   4  transaction timeout ms
//	   1  state (TxnState: 0 Empty, 1 Ongoing, 2 PrepareCommit,
//	      3 PrepareAbort, 4 CompleteCommit, 5 CompleteAbort, 6 Dead)
//	   8  transaction start ms (-1: none)
//	   8  last update ms
//	   4  partition count; each: 2 topic length, topic, 4 partition
//	   4  group count; each: 2 group length, group
//
// Body, type 2 (coordinator epoch):
//
//	0  1  type (2)
//	1  4  coordinator epoch
//
// Opening replays the file; a record cut short or failing its CRC ends the
// replay and the file is truncated there (a torn tail from a crash during
// an append, which was never acknowledged). The coordinator epoch is bumped
// on every open, so markers written by this incarnation carry a higher
// coordinator epoch than any earlier one. The file is compacted (rewritten
// with one record per live id, through a temp file, fsync and rename) when
// opened with dead records in it and when it grows past
// txnLogCompactBytes with more than half of it dead.
const (
	txnLogFile    = "transaction-state.log"
	txnLogMagic   = "MBTX"
	txnLogVersion = 1
	txnLogHeader  = 8

	txnRecordState = 1
	txnRecordEpoch = 2

	txnLogMaxRecord    = 16 << 20
	txnLogCompactBytes = 4 << 20
)

// ErrTxnLogCorrupt means the transaction log's header cannot be trusted.
var ErrTxnLogCorrupt = errors.New("coordinator: transaction log corrupt")

// txnLog is the open transaction log. Appends come from one writer at a
// time (the coordinator holds its lock); waitSynced may be called by many
// goroutines at once, and one fsync makes every record written before it
// durable (group commit), so the coordinator's lock is never held across
// an fsync.
type txnLog struct {
	fs   vfs.FS
	dir  string
	path string

	// syncMu is held around fsyncs and file swaps (rewrite, close). The
	// writer takes it only to swap the file.
	syncMu sync.Mutex
	f      vfs.File
	synced int64 // records known durable (guarded by syncMu)

	seq     atomic.Int64 // records appended since open (never decreases)
	size    int64        // bytes in the file (writer only)
	records int          // records in the file (writer only)

	brokenMu sync.Mutex
	broken   error // a failed write or fsync leaves the log unusable

	// unborn: no file yet; the first append creates it, holding the
	// epoch record for 0, the epoch openTxnLog gave (writer only, and
	// close).
	unborn bool
}

func (l *txnLog) brokenErr() error {
	l.brokenMu.Lock()
	defer l.brokenMu.Unlock()
	return l.broken
}

func (l *txnLog) setBroken(err error) error {
	l.brokenMu.Lock()
	defer l.brokenMu.Unlock()
	if l.broken == nil {
		l.broken = err
	}
	return l.broken
}

// openTxnLog replays the log in dir into states (one per live id) and
// returns it open for appends, with the coordinator epoch already bumped.
func openTxnLog(fs vfs.FS, dir string) (*txnLog, map[string]TxnMetadata, int32, error) {
	l := &txnLog{fs: fs, dir: dir, path: filepath.Join(dir, txnLogFile)}
	states := map[string]TxnMetadata{}
	epoch := int32(-1)
	raw, err := vfs.ReadFile(fs, l.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		l.unborn = true
		return l, states, 0, nil
	case err != nil:
		return nil, nil, 0, fmt.Errorf("read transaction log: %w", err)
	}
	records := 0
	if len(raw) > 0 {
		if len(raw) < txnLogHeader {
			raw = nil // a crash while creating the file
		} else if string(raw[:4]) != txnLogMagic || binary.BigEndian.Uint16(raw[4:]) != txnLogVersion {
			return nil, nil, 0, fmt.Errorf("%w: bad header in %s", ErrTxnLogCorrupt, l.path)
		}
	}
	if raw != nil {
		pos := txnLogHeader
		for pos < len(raw) {
			body, n, ok := readTxnRecord(raw[pos:])
			if !ok {
				break
			}
			switch body[0] {
			case txnRecordState:
				md, err := decodeTxnState(body)
				if err != nil {
					return nil, nil, 0, fmt.Errorf("%w at byte %d: %v", ErrTxnLogCorrupt, pos, err)
				}
				if md.State == TxnDead {
					delete(states, md.TransactionalID)
				} else {
					states[md.TransactionalID] = md
				}
			case txnRecordEpoch:
				if len(body) != 5 {
					return nil, nil, 0, fmt.Errorf("%w at byte %d: epoch record of %d bytes", ErrTxnLogCorrupt, pos, len(body))
				}
				epoch = int32(binary.BigEndian.Uint32(body[1:]))
			default:
				return nil, nil, 0, fmt.Errorf("%w at byte %d: record type %d", ErrTxnLogCorrupt, pos, body[0])
			}
			pos += n
			records++
		}
		raw = raw[:pos]
	}
	epoch++
	// Rewrite whenever there is anything to drop (dead records, a torn
	// tail) or no file yet; otherwise append the new epoch.
	if raw == nil || records > len(states)+1 || len(raw) != l.fileSize() {
		if err := l.rewrite(states, epoch); err != nil {
			l.close()
			return nil, nil, 0, err
		}
	} else {
		if err := l.openAppend(int64(len(raw)), records); err != nil {
			return nil, nil, 0, err
		}
		seq, err := l.append(encodeEpochRecord(epoch))
		if err == nil {
			err = l.waitSynced(seq)
		}
		if err != nil {
			l.close()
			return nil, nil, 0, err
		}
	}
	return l, states, epoch, nil
}

func (l *txnLog) fileSize() int {
	fi, err := l.fs.Stat(l.path)
	if err != nil {
		return -1
	}
	return int(fi.Size())
}

func (l *txnLog) openAppend(size int64, records int) error {
	f, err := l.fs.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open transaction log: %w", err)
	}
	l.f, l.size, l.records = f, size, records
	return nil
}

// rewrite replaces the file with one record per live id and the epoch.
// If that fails, appends go on to whichever complete file is at the path
// (the old one, or the new one when only the directory fsync failed).
func (l *txnLog) rewrite(states map[string]TxnMetadata, epoch int32) error {
	buf := txnLogStart(make([]byte, 0, 4096), epoch)
	for _, md := range sortedStates(states) {
		buf = append(buf, encodeTxnRecord(md)...)
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	err := vfs.WriteFileAtomic(l.fs, l.dir, l.path, buf)
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	if err != nil {
		err = fmt.Errorf("compact transaction log: %w", err)
		size := l.fileSize()
		if size < 0 {
			return l.setBroken(err)
		}
		if oerr := l.openAppend(int64(size), l.records); oerr != nil {
			l.setBroken(oerr)
		}
		return err
	}
	// The new file holds every state, fsynced.
	l.synced = l.seq.Load()
	return l.openAppend(int64(len(buf)), len(states)+1)
}

// txnLogStart appends the file header and the epoch record to b.
func txnLogStart(b []byte, epoch int32) []byte {
	b = append(b, txnLogMagic...)
	b = binary.BigEndian.AppendUint16(b, txnLogVersion)
	b = binary.BigEndian.AppendUint16(b, 0)
	return append(b, encodeEpochRecord(epoch)...)
}

// create makes the file of an unborn log, holding epoch 0. On failure the
// log stays unborn and the next append tries again.
func (l *txnLog) create() error {
	buf := txnLogStart(nil, 0)
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if err := vfs.WriteFileAtomic(l.fs, l.dir, l.path, buf); err != nil {
		_ = l.fs.Remove(l.path + ".tmp")
		return fmt.Errorf("create transaction log: %w", err)
	}
	if err := l.openAppend(int64(len(buf)), 1); err != nil {
		return err
	}
	l.unborn = false
	return nil
}

// append writes one framed record (no fsync) and returns its sequence
// number, for waitSynced.
func (l *txnLog) append(rec []byte) (int64, error) {
	if err := l.brokenErr(); err != nil {
		return 0, err
	}
	if l.unborn {
		if err := l.create(); err != nil {
			return 0, err
		}
	}
	if l.f == nil {
		return 0, errors.New("transaction log closed")
	}
	if _, err := l.f.Write(rec); err != nil {
		return 0, l.setBroken(fmt.Errorf("transaction log append: %w", err))
	}
	l.size += int64(len(rec))
	l.records++
	return l.seq.Add(1), nil
}

// waitSynced returns once record seq (and every record before it) is
// durable. Concurrent callers share one fsync.
func (l *txnLog) waitSynced(seq int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if err := l.brokenErr(); err != nil {
		return err
	}
	if l.synced >= seq {
		return nil
	}
	if l.f == nil {
		return errors.New("transaction log closed")
	}
	target := l.seq.Load() // every record whose write has returned
	if err := l.f.Sync(); err != nil {
		return l.setBroken(fmt.Errorf("transaction log fsync: %w", err))
	}
	l.synced = target
	return nil
}

// needsCompaction reports whether the file is large and mostly dead.
func (l *txnLog) needsCompaction(live int) bool {
	return l.size >= txnLogCompactBytes && l.records >= 2*(live+1) && l.brokenErr() == nil
}

func (l *txnLog) close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.unborn = false
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

func sortedStates(states map[string]TxnMetadata) []TxnMetadata {
	out := make([]TxnMetadata, 0, len(states))
	for _, md := range states {
		out = append(out, md)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out
}

// readTxnRecord frames one record; ok is false for a torn or corrupt one.
func readTxnRecord(b []byte) (body []byte, n int, ok bool) {
	if len(b) < 8 {
		return nil, 0, false
	}
	size := binary.BigEndian.Uint32(b)
	if size == 0 || size > txnLogMaxRecord || int(size) > len(b)-8 {
		return nil, 0, false
	}
	body = b[8 : 8+size]
	if crc32.Checksum(body, crcTable) != binary.BigEndian.Uint32(b[4:]) {
		return nil, 0, false
	}
	return body, 8 + int(size), true
}

func frameTxnRecord(body []byte) []byte {
	out := make([]byte, 8, 8+len(body))
	binary.BigEndian.PutUint32(out, uint32(len(body)))
	binary.BigEndian.PutUint32(out[4:], crc32.Checksum(body, crcTable))
	return append(out, body...)
}

func encodeEpochRecord(epoch int32) []byte {
	return frameTxnRecord(binary.BigEndian.AppendUint32([]byte{txnRecordEpoch}, uint32(epoch)))
}

func appendString16(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func encodeTxnRecord(md TxnMetadata) []byte {
	b := []byte{txnRecordState}
	b = appendString16(b, md.TransactionalID)
	b = binary.BigEndian.AppendUint64(b, uint64(md.ProducerID))
	b = binary.BigEndian.AppendUint64(b, uint64(md.LastProducerID))
	b = binary.BigEndian.AppendUint16(b, uint16(md.ProducerEpoch))
	b = binary.BigEndian.AppendUint16(b, uint16(md.LastProducerEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(md.TimeoutMs))
	b = append(b, byte(md.State))
	b = binary.BigEndian.AppendUint64(b, uint64(md.StartMs))
	b = binary.BigEndian.AppendUint64(b, uint64(md.LastUpdateMs))
	b = binary.BigEndian.AppendUint32(b, uint32(len(md.Partitions)))
	for _, tp := range md.Partitions {
		b = appendString16(b, tp.Topic)
		b = binary.BigEndian.AppendUint32(b, uint32(tp.Partition))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(md.Groups)))
	for _, g := range md.Groups {
		b = appendString16(b, g)
	}
	return frameTxnRecord(b)
}

// txnDecoder reads big-endian fields, remembering the first short read.
type txnDecoder struct {
	b   []byte
	err error
}

func (d *txnDecoder) take(n int) []byte {
	if d.err != nil || n > len(d.b) {
		d.err = io.ErrUnexpectedEOF
		return make([]byte, n)
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *txnDecoder) u16() uint16 { return binary.BigEndian.Uint16(d.take(2)) }
func (d *txnDecoder) u32() uint32 { return binary.BigEndian.Uint32(d.take(4)) }
func (d *txnDecoder) u64() uint64 { return binary.BigEndian.Uint64(d.take(8)) }
func (d *txnDecoder) str() string { return string(d.take(int(d.u16()))) }
func (d *txnDecoder) count() (int, bool) {
	n := d.u32()
	return int(n), d.err == nil && int(n) <= len(d.b)
}

func decodeTxnState(body []byte) (TxnMetadata, error) {
	d := &txnDecoder{b: body[1:]}
	var md TxnMetadata
	md.TransactionalID = d.str()
	md.ProducerID = int64(d.u64())
	md.LastProducerID = int64(d.u64())
	md.ProducerEpoch = int16(d.u16())
	md.LastProducerEpoch = int16(d.u16())
	md.TimeoutMs = int32(d.u32())
	md.State = TxnState(d.take(1)[0])
	md.StartMs = int64(d.u64())
	md.LastUpdateMs = int64(d.u64())
	n, ok := d.count()
	if !ok {
		return md, fmt.Errorf("partition count: %w", io.ErrUnexpectedEOF)
	}
	for i := 0; i < n && d.err == nil; i++ {
		md.Partitions = append(md.Partitions, TopicPartition{Topic: d.str(), Partition: int32(d.u32())})
	}
	n, ok = d.count()
	if !ok {
		return md, fmt.Errorf("group count: %w", io.ErrUnexpectedEOF)
	}
	for i := 0; i < n && d.err == nil; i++ {
		md.Groups = append(md.Groups, d.str())
	}
	switch {
	case d.err != nil:
		return md, d.err
	case len(d.b) != 0:
		return md, fmt.Errorf("%d trailing bytes", len(d.b))
	case md.State < TxnEmpty || md.State > TxnDead:
		return md, fmt.Errorf("state %d", md.State)
	case md.TransactionalID == "" || md.ProducerID < 0:
		return md, errors.New("empty transactional id or negative producer id")
	}
	return md, nil
}
