// Package recordlog is a durable record log of its own, beside the
// partition log, in the spirit of pebble's record package and etcd's
// wal. The coordinators keep their state in Kafka's internal topics
// (__consumer_offsets, __transaction_state, __mirror_state); what still
// uses this package, and why:
//
//   - mirror-sources.log (internal/mirror/statelog.go): the mirrors'
//     source security settings, secrets included, which must never be
//     in a topic that Fetch serves;
//   - the migration readers of data dirs written by earlier versions:
//     the group log (group-log, internal/coordinator/group_store.go) and
//     mirror-state.log (internal/mirror/statelog.go), read once at the
//     first start and removed once the topic holds their records (the
//     transaction log's reader, internal/coordinator/txn_legacy.go,
//     reads the same format with its own code);
//   - the group coordinator without __consumer_offsets, on the group log
//     as those versions ran it: the peer of the store benchmarks
//     (internal/broker BenchmarkOffsetCommitStores) and the writer of
//     the migration tests' old data dirs, and the store of the
//     coordinator's unit tests of the group log format.
//
// The format: one append-only file of framed
// records behind a magic/version header, made durable by group commit (one
// fsync shared by every record appended before it), cut at a torn tail
// when it is opened, and compacted by writing a new file and renaming it
// over the old one.
//
// File:
//
//	0  4  magic (4 ASCII bytes naming the log, e.g. "MBTX", "MBGL",
//	      "MBMS", "MBMC")
//	4  2  version (uint16, big endian; owned by the log's user)
//	6  2  reserved (0)
//	8  …  frames, back to back
//
// Frame:
//
//	0  4  body length N (uint32, big endian; 1 ≤ N ≤ Format.MaxRecord;
//	      a Writer refuses a longer body with ErrTooLarge)
//	4  4  CRC-32C (Castagnoli) of the body
//	8  N  body (its first byte is, by convention, the user's record type)
//
// A frame is valid when it is complete, its length is in range, its CRC
// matches and (if the user gives one) its check accepts the body. Reading
// stops at the first frame that is not valid: that is the torn tail of an
// append that was never acknowledged (every acknowledged frame was fsynced
// before the answer, and only frames after it were in flight), and Open
// truncates the file there. A log opened with Resync instead skips a
// damaged stretch that has valid frames after it, reporting it as a
// Damage: damage to written data, not a torn write, whose records are lost
// while the rest is kept.
//
// testdata/recordlog.golden.hex is a hex dump of a small file in this
// format; TestGolden fails when the encoding changes (regenerate with
// MINIBROKER_UPDATE_GOLDEN=1, and bump the user's version).
package recordlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

const (
	// HeaderLen is the size of the file header.
	HeaderLen = 8
	// FrameHeaderLen is the size of a frame's length and CRC.
	FrameHeaderLen = 8
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrBadHeader: the file does not start with the header this log writes
// (a foreign file, or a newer version). It is never silently replaced.
var ErrBadHeader = errors.New("recordlog: bad header")

// ErrTooLarge is returned by a Writer asked to write a frame whose body
// is longer than Format.MaxRecord: read back it would be damage (and with
// Resync, frames inside its body could be read as the log's own), so it
// is refused, nothing of the call is written and the log stays usable.
var ErrTooLarge = errors.New("recordlog: record too large")

// ErrClosed is returned by a Writer that was closed.
var ErrClosed = errors.New("recordlog: closed")

// Format names one log's header and bounds its frames.
type Format struct {
	Magic     string // exactly 4 bytes
	Version   uint16
	MaxRecord int // the largest body; a longer length prefix is damage

	// private are the test seams (knobs.go; ReadFrame reads skipCRC):
	// unexported, so no config file, flag or API sets them; the zero
	// value is production. Only this package's tests set them.
	private knobs
}

// AppendHeader appends the file header to dst.
func (f Format) AppendHeader(dst []byte) []byte {
	dst = append(dst, f.Magic...)
	dst = binary.BigEndian.AppendUint16(dst, f.Version)
	return binary.BigEndian.AppendUint16(dst, 0)
}

// CheckHeader reports whether b starts with this format's header.
func (f Format) CheckHeader(b []byte) error {
	if len(b) < HeaderLen || string(b[:4]) != f.Magic {
		return fmt.Errorf("%w: bad magic", ErrBadHeader)
	}
	if v := binary.BigEndian.Uint16(b[4:]); v != f.Version {
		return fmt.Errorf("%w: unknown version %d", ErrBadHeader, v)
	}
	return nil
}

// tornHeader reports whether b, shorter than a header, is a prefix of
// this format's header: a file whose creation never finished.
func (f Format) tornHeader(b []byte) bool {
	h := f.AppendHeader(nil)
	return len(b) < HeaderLen && string(h[:len(b)]) == string(b)
}

// AppendFrame appends body as one frame.
func AppendFrame(dst, body []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(body, crcTable))
	return append(dst, body...)
}

// AppendFrameFunc appends one frame whose body body appends in place (no
// copy of the body).
func AppendFrameFunc(dst []byte, body func([]byte) []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, FrameHeaderLen)...)
	dst = body(dst)
	b := dst[start+FrameHeaderLen:]
	binary.BigEndian.PutUint32(dst[start:], uint32(len(b)))
	binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(b, crcTable))
	return dst
}

// checkFrames refuses frames (built with AppendFrame or AppendFrameFunc)
// holding a body longer than MaxRecord.
func (f Format) checkFrames(frames []byte) error {
	for i, pos := 0, 0; pos+FrameHeaderLen <= len(frames); i++ {
		size := binary.BigEndian.Uint32(frames[pos:])
		if int64(size) > int64(f.MaxRecord) {
			return fmt.Errorf("%w: frame %d holds %d bytes, over the %d a record holds", ErrTooLarge, i, size, f.MaxRecord)
		}
		pos += FrameHeaderLen + int(size)
	}
	return nil
}

// ReadFrame reads the frame at the start of b. ok is false unless it is
// complete, its length is in range and its CRC matches.
func (f Format) ReadFrame(b []byte) (body []byte, n int, ok bool) {
	if len(b) < FrameHeaderLen {
		return nil, 0, false
	}
	size := binary.BigEndian.Uint32(b)
	if size == 0 || int64(size) > int64(f.MaxRecord) || int64(size) > int64(len(b)-FrameHeaderLen) {
		return nil, 0, false
	}
	body = b[FrameHeaderLen : FrameHeaderLen+int(size)]
	if !f.private.skipCRC && crc32.Checksum(body, crcTable) != binary.BigEndian.Uint32(b[4:]) {
		return nil, 0, false
	}
	return body, FrameHeaderLen + int(size), true
}

// Damage is a damaged stretch [From, To) of a log read with Resync, with
// valid frames after it.
type Damage struct{ From, To int }

// ScanOptions says how Scan reads a log.
type ScanOptions struct {
	// Resync skips a damaged stretch that has valid frames after it
	// instead of ending the log there.
	Resync bool
	// Check, if set, is part of a frame's validity: a body it rejects is
	// damage (for example one that does not decode).
	Check func(body []byte) error
}

// Scan walks the frames of a whole file b (header included, not checked
// here) and calls fn with each valid frame's offset and body; an error
// from fn ends the scan and is returned. end is where the valid log ends:
// the first invalid frame with no valid frame after it (the torn tail),
// or len(b).
func (f Format) Scan(b []byte, o ScanOptions, fn func(off int, body []byte) error) (end int, damaged []Damage, err error) {
	pos := HeaderLen
	for pos < len(b) {
		if body, n, ok := f.validAt(b, pos, o.Check); ok {
			if err := fn(pos, body); err != nil {
				return pos, damaged, err
			}
			pos += n
			continue
		}
		if !o.Resync {
			return pos, damaged, nil
		}
		next := -1
		for p := pos + 1; p+FrameHeaderLen <= len(b); p++ {
			if _, _, ok := f.validAt(b, p, o.Check); ok {
				next = p
				break
			}
		}
		if next < 0 {
			return pos, damaged, nil // torn tail
		}
		damaged = append(damaged, Damage{From: pos, To: next})
		pos = next
	}
	return pos, damaged, nil
}

func (f Format) validAt(b []byte, pos int, check func([]byte) error) ([]byte, int, bool) {
	body, n, ok := f.ReadFrame(b[pos:])
	if ok && check != nil && check(body) != nil {
		return nil, 0, false
	}
	return body, n, ok
}
