package log

// verification records which bytes of a segment have had their CRCs
// checked in this process lifetime, so that reads check each batch's CRC
// at most once (Kafka checks none when serving a fetch; see doc.go,
// "Reads"). It is two file positions, both at batch boundaries:
//
//		0            prefixEnd          suffixStart          size
//		+----------------+--------------------+----------------+
//		|    verified    |     unverified     |    verified    |
//		+----------------+--------------------+----------------+
//
//	  - [0, prefixEnd): checked by recovery, or by reads that started
//	    inside it (or at its end) and found the batches good. Sequential
//	    readers move it forward.
//	  - [suffixStart, size): appended by this process after checking (or
//	    building) the batches, or checked by a read that reached it. A
//	    clean open leaves the old bytes unverified, and one position could
//	    not then cover what is appended after them; the suffix does.
//
// A read checks the CRC of every batch not wholly inside one of the two
// parts. The verified parts only grow (prefixEnd forward, suffixStart
// backward), except that truncation lowers both to the new size. When the
// parts meet, the whole segment is verified (prefixEnd = size). A read of
// the unverified middle that touches neither part is checked every time:
// only two positions are kept per segment.
//
// The fields are guarded by Log.mu. They grow only while the grower
// holds truncMu (for reading, reads; for writing, recovery and
// truncation) or appendMu (appends), so bytes counted as verified cannot
// be replaced underneath; a reader's snapshot (segmentView) is a subset
// of the current state, so a stale one costs only an extra check.
type verification struct {
	prefixEnd   int64
	suffixStart int64
}

// unverified is the state of a segment of size bytes that nothing in this
// process has checked (a segment opened without recovery). A new, empty
// segment is unverified(0): everything appended to it after a check is
// verified.
func unverified(size int64) verification {
	return verification{prefixEnd: 0, suffixStart: size}
}

// covers reports whether the batch at [start, end) was verified.
func (v verification) covers(start, end int64) bool {
	return end <= v.prefixEnd || start >= v.suffixStart
}

// checked records that a read found the batches in [start, end) good.
// size is the segment's current size. A range that touches neither
// verified part is forgotten.
func (v *verification) checked(start, end, size int64) {
	if start <= v.prefixEnd && end > v.prefixEnd {
		v.prefixEnd = end
	}
	if end >= v.suffixStart && start < v.suffixStart {
		v.suffixStart = start
	}
	if v.prefixEnd >= v.suffixStart {
		v.prefixEnd = size
	}
}

// appended records that the segment grew from oldSize to newSize. With
// checked the new batches' CRCs were checked (or computed) by the writer
// and they extend both parts; without, they are unverified and end the
// suffix (which must reach the segment end).
func (v *verification) appended(oldSize, newSize int64, checked bool) {
	if !checked {
		v.suffixStart = newSize
		return
	}
	if v.prefixEnd == oldSize {
		v.prefixEnd = newSize
	}
	// [suffixStart, oldSize) was verified and [oldSize, newSize) is: the
	// suffix extends to the new end by itself.
}

// truncated records that the segment was cut to size bytes.
func (v *verification) truncated(size int64) {
	v.prefixEnd = min(v.prefixEnd, size)
	v.suffixStart = min(v.suffixStart, size)
}
