package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/minibroker/minibroker/internal/vfs"
)

// AbortedTxn is one entry of a .txnindex: an aborted transaction of
// ProducerID spanning [FirstOffset, LastOffset] (LastOffset is its ABORT
// marker), and the last stable offset when it was aborted.
type AbortedTxn struct {
	ProducerID, FirstOffset, LastOffset, LastStableOffset int64
}

// TxnIndexEntrySize is the size of a .txnindex entry; see doc.go.
const (
	TxnIndexEntrySize = 34
	txnEntrySize      = TxnIndexEntrySize
	txnEntryVersion   = 0
)

func (t AbortedTxn) appendTo(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, txnEntryVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(t.LastStableOffset))
}

var errTxnVersion = errors.New("unknown txnindex entry version")

func decodeAbortedTxn(b []byte) (AbortedTxn, error) {
	if len(b) < txnEntrySize {
		return AbortedTxn{}, errTornTail
	}
	v, t := DecodeTxnIndexEntry(b)
	if v != txnEntryVersion {
		return AbortedTxn{}, fmt.Errorf("%w %d", errTxnVersion, v)
	}
	return t, nil
}

// DecodeTxnIndexEntry decodes one .txnindex entry (TxnIndexEntrySize
// bytes) whatever its version; the log reads only version 0. Exported for
// internal/logtool, which shows entries of any version.
func DecodeTxnIndexEntry(b []byte) (version int16, t AbortedTxn) {
	return int16(binary.BigEndian.Uint16(b)), AbortedTxn{
		ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
		FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
		LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
		LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
	}
}

// txnIndex is a segment's .txnindex. Aborted transactions are rare, so the
// entries live in memory; the file is created on the first entry (as
// Kafka does), keeping an fd per segment only where needed.
type txnIndex struct {
	fsys    vfs.FS
	path    string
	f       vfs.File // nil until the first entry
	entries []AbortedTxn
}

func openTxnIndex(fsys vfs.FS, path string) (*txnIndex, error) {
	x := &txnIndex{fsys: fsys, path: path}
	data, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return x, nil
	}
	if err != nil {
		return nil, storageErr("read", path, err)
	}
	for len(data) >= txnEntrySize {
		t, err := decodeAbortedTxn(data)
		if err != nil {
			break // keep what decoded; the rest is rewritten below
		}
		x.entries = append(x.entries, t)
		data = data[txnEntrySize:]
	}
	if err := x.open(); err != nil {
		return nil, err
	}
	if len(data) > 0 {
		if err := x.rewrite(); err != nil {
			x.close()
			return nil, err
		}
	}
	return x, nil
}

func (x *txnIndex) open() error {
	f, err := x.fsys.OpenFile(x.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return storageErr("open", x.path, err)
	}
	x.f = f
	return nil
}

// rewrite makes the file hold exactly x.entries.
func (x *txnIndex) rewrite() error {
	if x.f == nil {
		if len(x.entries) == 0 {
			return nil
		}
		if err := x.open(); err != nil {
			return err
		}
	}
	if err := x.f.Truncate(0); err != nil {
		return storageErr("truncate", x.path, err)
	}
	var b []byte
	for _, t := range x.entries {
		b = t.appendTo(b)
	}
	if len(b) > 0 {
		if _, err := x.f.Write(b); err != nil {
			return storageErr("write", x.path, err)
		}
	}
	return nil
}

// add appends t; an exact duplicate of an existing entry is a no-op, so a
// partition replaying its log may re-add what survived a crash. The entry
// is kept in memory before the file is written, and stays there when the
// file cannot be opened or written (or write is false: the log is already
// offline): its ABORT marker is in the log, and read_committed fetches,
// which read the entries in memory, must go on filtering the aborted
// records. The caller takes the log offline on the storage error.
func (x *txnIndex) add(t AbortedTxn, write bool) error {
	for _, e := range x.entries {
		if e == t {
			return nil
		}
	}
	if n := len(x.entries); n > 0 && t.LastOffset < x.entries[n-1].LastOffset {
		return fmt.Errorf("%w: aborted txn last offset %d below previous %d", ErrInvalidBatch, t.LastOffset, x.entries[n-1].LastOffset)
	}
	x.entries = append(x.entries, t)
	if !write {
		return nil
	}
	if x.f == nil {
		if err := x.open(); err != nil {
			return err
		}
	}
	if _, err := x.f.Write(t.appendTo(nil)); err != nil {
		return storageErr("write", x.path, err)
	}
	return nil
}

// truncateTo drops transactions whose marker is at or after off.
func (x *txnIndex) truncateTo(off int64) error {
	keep := len(x.entries)
	for keep > 0 && x.entries[keep-1].LastOffset >= off {
		keep--
	}
	if keep == len(x.entries) {
		return nil
	}
	x.entries = x.entries[:keep]
	if err := x.f.Truncate(int64(keep) * txnEntrySize); err != nil {
		return storageErr("truncate", x.path, err)
	}
	return nil
}

// close closes the file if open. x may be nil: openSegment closes a
// segment whose transaction index failed to open (EMFILE reading it).
func (x *txnIndex) close() error {
	if x == nil || x.f == nil {
		return nil
	}
	return x.f.Close()
}
