package partition

import (
	mlog "github.com/minibroker/minibroker/internal/log"
)

// ReadResult is one partition's share of a Fetch.
type ReadResult struct {
	Records []byte
	// Span, when its File is set (ReadSpan), holds the batches instead
	// of Records; the caller closes it (Span.Close) after sending it.
	Span mlog.Span
	Offsets
	Aborted []mlog.AbortedTxn // read_committed only
}

// Read returns raw batches from offset, at most maxBytes (but at least one
// whole batch when minOneBatch), never past the high watermark, or past the
// last stable offset when committedOnly (read_committed).
func (p *Partition) Read(offset int64, maxBytes int, minOneBatch, committedOnly bool) (ReadResult, error) {
	return p.ReadInto(nil, offset, maxBytes, minOneBatch, committedOnly)
}

// ReadInto is Read with the record bytes read into a buffer from get
// (see log.ReadInto), so that the caller can pool it; get is called only
// when there is something to read. A nil get allocates.
func (p *Partition) ReadInto(get func(n int) []byte, offset int64, maxBytes int, minOneBatch, committedOnly bool) (ReadResult, error) {
	return p.read(get, offset, maxBytes, minOneBatch, committedOnly, 0)
}

// ReadSpan is ReadInto that leaves batches of at least minSpan bytes in
// the segment file, as res.Span, for a sendfile(2) (see log.ReadSpan).
func (p *Partition) ReadSpan(get func(n int) []byte, offset int64, maxBytes int, minOneBatch, committedOnly bool, minSpan int) (ReadResult, error) {
	return p.read(get, offset, maxBytes, minOneBatch, committedOnly, minSpan)
}

// read is ReadInto, or ReadSpan when minSpan > 0.
func (p *Partition) read(get func(n int) []byte, offset int64, maxBytes int, minOneBatch, committedOnly bool, minSpan int) (ReadResult, error) {
	o := p.Offsets()
	res := ReadResult{Offsets: o}
	if offset < o.LogStart || offset > o.LogEnd {
		return res, mlog.ErrOffsetOutOfRange
	}
	upper := o.HighWatermark
	if committedOnly {
		upper = o.LastStable
	}
	if offset >= upper {
		return res, nil
	}
	var raw []byte
	var err error
	switch {
	case minSpan > 0:
		raw, res.Span, err = p.log.ReadSpan(get, offset, upper, maxBytes, minOneBatch, minSpan)
	case get == nil:
		raw, err = p.log.ReadUpTo(offset, upper, maxBytes, minOneBatch)
	default:
		raw, err = p.log.ReadInto(get, offset, upper, maxBytes, minOneBatch)
	}
	if err != nil {
		return res, err
	}
	res.Records = raw
	if committedOnly && (len(raw) > 0 || res.Span.Len > 0) {
		res.Aborted = p.log.AbortedTxns(offset, upper)
	}
	return res, nil
}
