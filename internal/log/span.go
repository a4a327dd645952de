package log

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/minibroker/minibroker/internal/batch"
)

// A Span is batches left in their segment file, for a caller that sends
// them to a socket with sendfile(2) instead of reading them (Kafka's
// FileRecords.writeTo). File is a duplicate of the segment's descriptor,
// owned by the caller, who must close it: retention, deletion or Close
// may close the segment meanwhile, and the duplicate still reads the
// bytes (an unlinked file lives while a descriptor is open).
//
// The bytes [Pos, Pos+Len) were whole batches, each verified in this
// process lifetime, when ReadSpan returned. Appends never change them.
// Only TruncateTo (which only a mirror calls) could, and it waits until
// every Span of the log is closed before it cuts (for at most
// spanDrainTimeout, then ErrSpansOutstanding): a span is never sent while
// its bytes are cut or rewritten. A send that still finds the file shorter
// than Pos+Len must fail rather than send less, as Kafka's
// FileRecords.writeTo does.
type Span struct {
	File *os.File
	Pos  int64
	Len  int
	log  *Log
}

// Close closes the span's file and lets a waiting TruncateTo proceed once
// the log has no other span out. Call it once, after the send.
func (s Span) Close() error {
	err := s.File.Close()
	if s.log != nil {
		s.log.spanClosed()
	}
	return err
}

// spanClosed counts a span in and, when it was the last one out, wakes a
// waiting TruncateTo.
func (l *Log) spanClosed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spansOut--
	if l.spansOut == 0 && l.spansDrained != nil {
		close(l.spansDrained)
		l.spansDrained = nil
	}
}

// spanDrainTimeout bounds how long TruncateTo waits for spans to close (a
// client reading its response slowly holds one until the write ends).
const spanDrainTimeout = 30 * time.Second

// waitSpans waits, with truncMu held for writing (so no new span is
// handed out), until no span of the log is out, when a truncation to
// offset would cut anything. It sleeps on spansDrained, which the last
// Span.Close closes, holding no lock but truncMu meanwhile.
func (l *Log) waitSpans(offset int64) error {
	if l.opts.private.spanTruncateNoWait {
		return nil
	}
	l.mu.Lock()
	n, cuts := l.spansOut, offset < l.leo
	if n == 0 || !cuts {
		l.mu.Unlock()
		return nil
	}
	if l.spansDrained == nil {
		l.spansDrained = make(chan struct{})
	}
	drained := l.spansDrained
	l.mu.Unlock()
	timeout := l.opts.private.spanDrainTimeout
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-drained:
		return nil
	case <-timer.C:
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.spansOut == 0 {
			return nil
		}
		return fmt.Errorf("%w: %d after %v", ErrSpansOutstanding, l.spansOut, timeout)
	}
}

// spanRead asks read for a Span of at least min bytes; out is the span
// found (File nil: the batches were read into the buffer as usual).
type spanRead struct {
	min              int
	skipVerification bool // negative-control test seam (knobs)
	shareDescriptor  bool
	out              Span
}

// The header walk that measures a span costs a pread per batch (a window
// of spanScanReadahead bytes: not the batch, which the span is there to
// leave unread), about 1–2 µs; reading a MiB costs about 300 µs
// (BenchmarkReadSpan, BenchmarkReadVerified). So only batches of
// spanMinBatch bytes or more go in spans: a smaller first batch is read
// and copied, and a walk ends the span after spanMaxBatches batches (a
// MiB of the smallest).
const (
	spanScanReadahead = 1 << 10
	spanMinBatch      = 8 << 10
	spanMaxBatches    = 128
)

// ReadSpan is ReadInto that returns the batches as a Span instead of
// reading them when they come to at least minSpan bytes, were all verified
// in this process lifetime (a read that would check a CRC reads the bytes,
// as ReadInto), and the segment is a real file that can be duplicated.
// Otherwise the batches are read into a buffer from get (which must not
// be nil; see ReadInto) and the Span is empty. Either way the batches are
// those ReadInto would return.
func (l *Log) ReadSpan(get func(n int) []byte, offset, maxOffset int64, maxBytes int, minOneBatch bool, minSpan int) ([]byte, Span, error) {
	sr := &spanRead{min: max(minSpan, 1), skipVerification: l.opts.private.spanSkipsVerification,
		shareDescriptor: l.opts.private.spanSharesDescriptor}
	out, err := l.read(nil, growInto(get), offset, maxOffset, maxBytes, minOneBatch, sr)
	return out, sr.out, err
}

// of sets r.out to the batches from pos (where the batch with header
// first starts) that readBatches would return, if they qualify as a span.
// Anything unusual (a batch to check, damage, an IO error, no descriptor
// to spare) answers false, and the caller reads the bytes, with the
// copying path's checks and errors.
func (r *spanRead) of(v segmentView, first batch.Header, pos, maxOffset int64, maxBytes int, minOne bool) bool {
	if first.BaseOffset >= maxOffset || first.Size() < spanMinBatch {
		return false
	}
	want := min(int64(max(maxBytes, 0)), v.size-pos, maxReadBytes)
	if int64(first.Size()) > want {
		if !minOne {
			return false
		}
		want = int64(first.Size())
	}
	if want < int64(r.min) {
		return false
	}
	sc := newScanner(v.seg.log, v.seg.logPath, pos, v.size, spanScanReadahead)
	n, next := int64(0), int64(-1)
	for batches := 0; n < want && batches < spanMaxBatches; batches++ {
		h, _, at, err := sc.next(false)
		if err == io.EOF {
			break
		}
		if err != nil {
			return false
		}
		size := int64(h.Size())
		if n+size > want || h.BaseOffset >= maxOffset {
			break
		}
		if h.BaseOffset < next || !(r.skipVerification || v.verified.covers(at, at+size)) {
			return false
		}
		next = h.LastOffset() + 1
		n += size
	}
	if n < int64(r.min) {
		return false
	}
	f, ok := dupFile(v.seg.log, r.shareDescriptor)
	if !ok {
		return false
	}
	r.out = Span{File: f, Pos: pos, Len: int(n)}
	return true
}
