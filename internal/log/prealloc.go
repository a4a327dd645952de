package log

import "errors"

// Preallocation of the active segment (Linux; Kafka's log.preallocate,
// off by default as in Kafka): once a segment holds
// preallocFrom bytes, blocks are reserved ahead of its writes with
// fallocate(FALLOC_FL_KEEP_SIZE), in steps as large as the segment so far
// (at most preallocMax, never past log.segment.bytes). The file's size,
// which is all that readers and recovery look at, does not change; a
// write into reserved blocks skips ext4's per-write block reservation.
// The reserved tail past the data is given back (a truncation to the
// file's own size) by the full flush after the segment rolls (the roll's
// background flush, off the append path) and when the log closes; after
// a crash it stays reserved until the segment is deleted. At most
// preallocMax, or the segment's size, is reserved and unwritten per log.
// Kafka's preallocation instead sizes a new segment file to
// log.segment.bytes and cuts it back at roll; minibroker keeps the file's
// size true. Off by default: the reservation runs on the append path with
// the inode locked, and while the file system's journal is busy (a rolled
// segment's background fsync) it waited up to 0.37 s (docs/OPTIMISATIONS.md,
// Produce tail latency).
const (
	preallocFrom = 4 << 20
	preallocMax  = 64 << 20
)

var errNoPrealloc = errors.New("preallocation not supported")

// preallocate reserves blocks so that n more bytes after the segment's
// size fall inside its reservation. Called with appendMu held (the size
// and the reservation change only under it) and mu released. Errors turn
// preallocation off for the segment: it is only a saving.
func (s *segment) preallocate(n, segmentBytes int64) {
	end := s.size + n
	if s.noPrealloc || end <= s.allocated || end < preallocFrom {
		return
	}
	step := min(max(s.size, n), preallocMax)
	target := min(max(end, s.size+step), segmentBytes)
	from := max(s.allocated, s.size)
	if target <= from {
		return
	}
	if err := fallocateKeepSize(s.log, from, target-from); err != nil {
		s.noPrealloc = true
		return
	}
	s.allocated = target
}

// trimPrealloc gives back the blocks reserved past the segment's data.
// appendMu held (or the log closing), mu released.
func (s *segment) trimPrealloc() error {
	if s.allocated <= s.size {
		return nil
	}
	s.allocated = 0
	return s.log.Truncate(s.size)
}
