package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/minibroker/minibroker/internal/vfs"
)

// The transaction log of earlier versions: minibroker's own file,
// transaction-state.log, which held the coordinator's state before
// __transaction_state did (txn_topic.go). It is only read now, once, by
// the upgrade (txn_upgrade.go), which moves its states into the topic and
// removes it.
//
// File (the recordlog format of those versions):
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
// fields): type 1's body with type 3, then
//
//	8  next producer id (-1: none)
//	1  client transaction version (0, 1 or 2)
//
// A type-1 record reads as next producer id -1, client version 0. The last
// record of an id wins; a Dead state removes it. Reading stops at the
// first frame that is cut short or fails its CRC: the torn tail of an
// append that was never acknowledged (those versions fsynced every
// acknowledged record).
const (
	txnLogFile    = "transaction-state.log"
	txnLogMagic   = "MBTX"
	txnLogVersion = 1

	txnRecordState   = 1
	txnRecordEpoch   = 2
	txnRecordStateV2 = 3

	txnLogMaxRecord = 16 << 20
)

// ErrTxnLogCorrupt means the old transaction log's header, or a record
// with a valid checksum, cannot be read: the upgrade refuses to guess.
var ErrTxnLogCorrupt = errors.New("coordinator: transaction log corrupt")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// legacyTxnLog is what the old file held.
type legacyTxnLog struct {
	exists bool
	states map[string]TxnMetadata
	epoch  int32 // the last coordinator epoch recorded, -1 if none
	torn   int   // bytes of torn tail ignored
}

// readLegacyTxnLog reads dir's transaction-state.log, if there is one.
func readLegacyTxnLog(fs vfs.FS, dir string) (legacyTxnLog, error) {
	l := legacyTxnLog{states: map[string]TxnMetadata{}, epoch: -1}
	data, err := vfs.ReadFile(fs, filepath.Join(dir, txnLogFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return l, nil
	case err != nil:
		return l, fmt.Errorf("read %s: %w", txnLogFile, err)
	}
	l.exists = true
	if len(data) < 8 {
		// A creation cut short: the file was never acknowledged to hold
		// anything.
		l.torn = len(data)
		return l, nil
	}
	if string(data[:4]) != txnLogMagic || binary.BigEndian.Uint16(data[4:]) != txnLogVersion {
		return l, fmt.Errorf("%w: %s: bad header", ErrTxnLogCorrupt, txnLogFile)
	}
	pos := 8
	for pos < len(data) {
		rest := data[pos:]
		if len(rest) < 8 {
			break
		}
		n := int(binary.BigEndian.Uint32(rest))
		if n < 1 || n > txnLogMaxRecord || len(rest) < 8+n ||
			crc32.Checksum(rest[8:8+n], castagnoli) != binary.BigEndian.Uint32(rest[4:]) {
			break
		}
		body := rest[8 : 8+n]
		switch body[0] {
		case txnRecordState, txnRecordStateV2:
			md, err := decodeTxnState(body)
			if err != nil {
				return l, fmt.Errorf("%w at byte %d: %v", ErrTxnLogCorrupt, pos, err)
			}
			if md.State == TxnDead {
				delete(l.states, md.TransactionalID)
			} else {
				l.states[md.TransactionalID] = md
			}
		case txnRecordEpoch:
			if len(body) != 5 {
				return l, fmt.Errorf("%w at byte %d: epoch record of %d bytes", ErrTxnLogCorrupt, pos, len(body))
			}
			l.epoch = int32(binary.BigEndian.Uint32(body[1:]))
		default:
			return l, fmt.Errorf("%w at byte %d: record type %d", ErrTxnLogCorrupt, pos, body[0])
		}
		pos += 8 + n
	}
	l.torn = len(data) - pos
	return l, nil
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
