package log

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/minibroker/minibroker/internal/batch"
)

// errTornTail marks a batch whose declared length runs past the end of the
// segment: the tail of an interrupted write.
var errTornTail = errors.New("batch runs past end of segment (torn write)")

// scanner walks the batches of a segment between two byte positions
// through a read-ahead window, without decoding records.
type scanner struct {
	r         io.ReaderAt
	name      string
	pos, end  int64
	readahead int
	buf       []byte // window contents
	bufStart  int64  // file position of buf[0]
	pooled    *[]byte
}

// headerBufs pools the read-ahead windows of header scans, which every
// Read does.
var headerBufs = sync.Pool{New: func() any { b := make([]byte, headerReadahead); return &b }}

// newHeaderScanner is a scanner with a pooled headerReadahead window;
// call release when done.
func newHeaderScanner(r io.ReaderAt, name string, pos, end int64) *scanner {
	s := newScanner(r, name, pos, end, headerReadahead)
	s.pooled = headerBufs.Get().(*[]byte)
	s.buf = (*s.pooled)[:0]
	return s
}

// release returns a pooled window; the scanner must not be used after.
func (s *scanner) release() {
	if s.pooled != nil && cap(s.buf) == cap(*s.pooled) {
		headerBufs.Put(s.pooled)
	}
	s.pooled, s.buf = nil, nil
}

// newScanner scans [pos, end) of r. readahead is the window size used
// when headers alone are needed; whole batches are always read whole.
func newScanner(r io.ReaderAt, name string, pos, end int64, readahead int) *scanner {
	return &scanner{r: r, name: name, pos: pos, end: end, readahead: readahead}
}

// window returns the bytes [pos, pos+n) of the file, reading as needed.
func (s *scanner) window(pos int64, n int) ([]byte, error) {
	if pos >= s.bufStart && pos+int64(n) <= s.bufStart+int64(len(s.buf)) {
		off := pos - s.bufStart
		return s.buf[off : off+int64(n)], nil
	}
	want := max(n, s.readahead)
	if rest := s.end - pos; int64(want) > rest {
		want = int(rest)
	}
	if cap(s.buf) < want {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	m, err := s.r.ReadAt(s.buf, pos)
	s.bufStart = pos
	s.buf = s.buf[:m]
	if m < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return s.buf[:n], nil
}

// next returns the header and position of the next batch. With whole set
// the raw batch is returned too (valid until the next call) and its CRC is
// checked. At the end it returns io.EOF; damage is a *CorruptionError; an
// IO failure is returned as is.
func (s *scanner) next(whole bool) (h batch.Header, raw []byte, pos int64, err error) {
	pos = s.pos
	if pos >= s.end {
		return h, nil, pos, io.EOF
	}
	corrupt := func(e error) error { return &CorruptionError{Segment: s.name, Offset: pos, Err: e} }
	if pos < 0 {
		return h, nil, pos, corrupt(errors.New("negative position (damaged index?)"))
	}
	if s.end-pos < batch.HeaderSize {
		return h, nil, pos, corrupt(errTornTail)
	}
	hb, err := s.window(pos, batch.HeaderSize)
	if err != nil {
		return h, nil, pos, err
	}
	size, _ := batch.SizeOf(hb) // hb holds a header
	length := size - batch.LogOverhead
	if size < batch.HeaderSize || size > math.MaxInt32 {
		return h, nil, pos, corrupt(fmt.Errorf("%w: batch length %d", batch.ErrInvalid, length))
	}
	if pos+size > s.end {
		if m, _ := batch.MagicOf(hb); m != 2 {
			return h, nil, pos, corrupt(fmt.Errorf("%w %d", batch.ErrMagic, m))
		}
		return h, nil, pos, corrupt(errTornTail)
	}
	if whole {
		raw, err = s.window(pos, int(size))
		if err != nil {
			return h, nil, pos, err
		}
		h, err = batch.Validate(raw)
	} else {
		h, err = batch.ParseHeader(hb)
		if err == nil && (h.LastOffsetDelta < 0 || h.NumRecords < 0) {
			err = fmt.Errorf("%w: negative count or delta", batch.ErrInvalid)
		}
	}
	if err == nil && !offsetsSane(&h) {
		err = fmt.Errorf("%w: offsets %d+%d out of range", batch.ErrInvalid, h.BaseOffset, h.LastOffsetDelta)
	}
	if err != nil {
		return h, nil, pos, corrupt(err)
	}
	s.pos = pos + size
	return h, raw, pos, nil
}

// offsetsSane reports whether a batch's offsets are representable: base
// not negative and base+delta+1 (the next offset) without overflow.
func offsetsSane(h *batch.Header) bool {
	return h.BaseOffset >= 0 && h.LastOffsetDelta >= 0 && h.BaseOffset < math.MaxInt64-int64(h.LastOffsetDelta)
}
