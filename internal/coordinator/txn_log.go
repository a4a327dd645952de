package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/minibroker/minibroker/internal/recordlog"
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
// File (a recordlog, byte diagram in internal/recordlog/format.go):
//
//	0  4  magic "MBTX"
//	4  2  version (1)
//	6  2  reserved (0)
//	8  …  frames: 4 body length N, 4 CRC-32C of the body, N body
//	      (bodies up to 16 MiB)
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
// Body, type 3 (transactional id state with the transaction version 2
// fields, written when a state has them: a client version above 0 or a
// next producer id): type 1's body with type 3, then
//
//	8  next producer id (-1: none)
//	1  client transaction version (0, 1 or 2)
//
// A type-1 record reads as next producer id -1, client version 0. (Type 3
// came after version 1 of the file; a build that predates it refuses a
// file holding one as corrupt rather than misreading it.)
//
// The file is a recordlog (internal/recordlog: header, frames, torn-tail
// cut, group commit, rewrite by rename), written through: a record is
// written to the file when the coordinator persists it, under its lock, and
// fsynced by the first request that waits for it. Opening replays the file;
// a record cut short or failing its CRC ends the replay and the file is
// truncated there (a torn tail from a crash during an append, which was
// never acknowledged). The coordinator epoch is bumped on every open, so
// markers written by this incarnation carry a higher coordinator epoch
// than any earlier one. The file is compacted (rewritten with one record
// per live id, through a temp file, fsync and rename) when opened with
// dead records in it and when it grows past txnLogCompactBytes with more
// than half of it dead.
const (
	txnLogFile    = "transaction-state.log"
	txnLogVersion = 1

	txnRecordState   = 1
	txnRecordEpoch   = 2
	txnRecordStateV2 = 3

	txnLogCompactBytes = 4 << 20
)

var txnLogFormat = recordlog.Format{Magic: "MBTX", Version: txnLogVersion, MaxRecord: 16 << 20}

// ErrTxnLogCorrupt means the transaction log's header cannot be trusted.
var ErrTxnLogCorrupt = errors.New("coordinator: transaction log corrupt")

// txnLog is the open transaction log. Appends come from one writer at a
// time (the coordinator holds its lock); waitSynced may be called by many
// goroutines at once, and one fsync makes every record written before it
// durable (group commit), so the coordinator's lock is never held across
// an fsync (but for the first append, which creates the file).
type txnLog struct {
	w *recordlog.Writer
}

// openTxnLog replays the log in dir into states (one per live id) and
// returns it open for appends, with the coordinator epoch already bumped.
func openTxnLog(fs vfs.FS, dir string) (*txnLog, map[string]TxnMetadata, int32, error) {
	states := map[string]TxnMetadata{}
	epoch := int32(-1)
	w, rec, err := recordlog.Open(recordlog.Options{FS: fs, Dir: dir, Name: txnLogFile, Format: txnLogFormat, WriteThrough: true},
		func(pos int, body []byte) error {
			switch body[0] {
			case txnRecordState, txnRecordStateV2:
				md, err := decodeTxnState(body)
				if err != nil {
					return fmt.Errorf("%w at byte %d: %v", ErrTxnLogCorrupt, pos, err)
				}
				if md.State == TxnDead {
					delete(states, md.TransactionalID)
				} else {
					states[md.TransactionalID] = md
				}
			case txnRecordEpoch:
				if len(body) != 5 {
					return fmt.Errorf("%w at byte %d: epoch record of %d bytes", ErrTxnLogCorrupt, pos, len(body))
				}
				epoch = int32(binary.BigEndian.Uint32(body[1:]))
			default:
				return fmt.Errorf("%w at byte %d: record type %d", ErrTxnLogCorrupt, pos, body[0])
			}
			return nil
		})
	switch {
	case errors.Is(err, recordlog.ErrBadHeader):
		return nil, nil, 0, fmt.Errorf("%w: %v", ErrTxnLogCorrupt, err)
	case err != nil:
		return nil, nil, 0, fmt.Errorf("transaction log: %w", err)
	}
	l := &txnLog{w: w}
	if w.Unborn() {
		// The first append creates the file with the epoch record for 0.
		return l, states, 0, nil
	}
	epoch++
	if rec.Records > len(states)+1 {
		// Dead records to drop: rewrite.
		if err := l.rewrite(states, epoch); err != nil {
			l.close()
			return nil, nil, 0, err
		}
		return l, states, epoch, nil
	}
	seq, err := l.w.Append(encodeEpochBody(epoch))
	if err == nil {
		err = l.w.Wait(seq)
	}
	if err != nil {
		l.close()
		return nil, nil, 0, err
	}
	return l, states, epoch, nil
}

// rewrite replaces the file with one record per live id and the epoch.
// If that fails, appends go on to whichever complete file is at the path
// (the old one, or the new one when only the directory fsync failed).
func (l *txnLog) rewrite(states map[string]TxnMetadata, epoch int32) error {
	buf := recordlog.AppendFrame(make([]byte, 0, 4096), encodeEpochBody(epoch))
	for _, md := range sortedStates(states) {
		buf = recordlog.AppendFrame(buf, encodeTxnState(md))
	}
	if err := l.w.Rewrite(buf, len(states)+1); err != nil {
		return fmt.Errorf("compact transaction log: %w", err)
	}
	return nil
}

// append writes one record (no fsync) and returns its sequence number,
// for waitSynced. The first append of an unborn log creates the file,
// fsynced, holding the epoch record for 0 before the record.
func (l *txnLog) append(body []byte) (int64, error) {
	bodies := [][]byte{body}
	if l.w.Unborn() {
		bodies = [][]byte{encodeEpochBody(0), body}
	}
	seq, err := l.w.Append(bodies...)
	if err != nil {
		return 0, fmt.Errorf("transaction log append: %w", err)
	}
	return int64(seq), nil
}

// waitSynced returns once record seq (and every record before it) is
// durable. Concurrent callers share one fsync.
func (l *txnLog) waitSynced(seq int64) error { return l.w.Wait(uint64(seq)) }

// seq is the number of the last record appended.
func (l *txnLog) seq() int64 { return int64(l.w.Appended()) }

func (l *txnLog) brokenErr() error { return l.w.Err() }

func (l *txnLog) records() int {
	_, _, n := l.w.Stats()
	return n
}

// needsCompaction reports whether the file is large and mostly dead.
func (l *txnLog) needsCompaction(live int) bool {
	size, _, records := l.w.Stats()
	return size >= txnLogCompactBytes && records >= 2*(live+1) && l.w.Err() == nil
}

// close makes the records no request waited for (Complete records)
// durable and closes the file.
func (l *txnLog) close() error { return l.w.Close(false) }

func sortedStates(states map[string]TxnMetadata) []TxnMetadata {
	out := make([]TxnMetadata, 0, len(states))
	for _, md := range states {
		out = append(out, md)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out
}

// readTxnRecord frames one record; ok is false for a torn or corrupt one.
func readTxnRecord(b []byte) (body []byte, n int, ok bool) { return txnLogFormat.ReadFrame(b) }

func encodeEpochBody(epoch int32) []byte {
	return binary.BigEndian.AppendUint32([]byte{txnRecordEpoch}, uint32(epoch))
}

// encodeEpochRecord is the framed epoch record.
func encodeEpochRecord(epoch int32) []byte { return recordlog.AppendFrame(nil, encodeEpochBody(epoch)) }

// encodeTxnRecord is the framed state record of md.
func encodeTxnRecord(md TxnMetadata) []byte { return recordlog.AppendFrame(nil, encodeTxnState(md)) }

func appendString16(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func encodeTxnState(md TxnMetadata) []byte {
	typ := byte(txnRecordState)
	v2 := md.ClientTxnVersion != 0 || md.NextProducerID >= 0
	if v2 {
		typ = txnRecordStateV2
	}
	b := []byte{typ}
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
	if v2 {
		b = binary.BigEndian.AppendUint64(b, uint64(md.NextProducerID))
		b = append(b, byte(md.ClientTxnVersion))
	}
	return b
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
	md.NextProducerID = noProducerID
	if body[0] == txnRecordStateV2 {
		md.NextProducerID = int64(d.u64())
		md.ClientTxnVersion = int8(d.take(1)[0])
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
	case md.ClientTxnVersion < 0 || md.ClientTxnVersion > TxnVersion2:
		return md, fmt.Errorf("client transaction version %d", md.ClientTxnVersion)
	}
	return md, nil
}
