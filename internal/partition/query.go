package partition

import (
	"errors"

	"github.com/minibroker/minibroker/internal/batch"
	mlog "github.com/minibroker/minibroker/internal/log"
)

// The queries the broker and the mirrors make of a partition's log, so
// that nothing outside this package holds the log itself (the barrier's
// rules live only here and in psm).

// Errors of CheckLeaderEpoch; the broker maps them to Kafka's codes.
var (
	// ErrFencedLeaderEpoch: the client's current leader epoch is older
	// than the partition's (FENCED_LEADER_EPOCH).
	ErrFencedLeaderEpoch = errors.New("partition: fenced leader epoch")
	// ErrUnknownLeaderEpoch: the client's current leader epoch is newer
	// than the partition's (UNKNOWN_LEADER_EPOCH).
	ErrUnknownLeaderEpoch = errors.New("partition: unknown leader epoch")
)

// CheckLeaderEpoch is Kafka's check of a request's CurrentLeaderEpoch
// (Partition.checkCurrentLeaderEpoch, used by Fetch v9+, ListOffsets v4+
// and OffsetForLeaderEpoch v2+): -1 (or any negative) skips it; an epoch
// below the partition's is fenced, one above it is unknown.
func (p *Partition) CheckLeaderEpoch(current int32) error {
	if current < 0 {
		return nil
	}
	switch cur := p.LeaderEpoch(); {
	case current < cur:
		return ErrFencedLeaderEpoch
	case current > cur:
		return ErrUnknownLeaderEpoch
	}
	return nil
}

// LatestEpoch is the leader epoch of the log's last batch (false: the log
// holds no batch with one).
func (p *Partition) LatestEpoch() (int32, bool) { return p.log.LatestEpoch() }

// EndOffsetForEpoch is the largest epoch ≤ epoch the log holds and the
// offset where it ends (the start of the next epoch, or the log end), as
// Kafka's leader answers OffsetForLeaderEpoch; -1, -1 when none.
func (p *Partition) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return p.log.EndOffsetForEpoch(epoch)
}

// EpochView is the leader-epoch cache with the log's start and end, read
// together, on which the log's epoch rules (EndOffsetFor, TruncatedTo)
// answer for a truncation not made: the mirror's divergence search.
func (p *Partition) EpochView() mlog.EpochView { return p.log.EpochView() }

// EpochEntries is the leader-epoch cache, ascending by start offset.
func (p *Partition) EpochEntries() []mlog.EpochEntry { return p.log.EpochEntries() }

// EpochAt is the leader epoch of the batch holding offset, -1 if unknown.
func (p *Partition) EpochAt(offset int64) int32 {
	epoch := int32(-1)
	for _, e := range p.log.EpochEntries() {
		if e.StartOffset > offset {
			break
		}
		epoch = e.Epoch
	}
	return epoch
}

// OffsetForTimestamp is the first offset whose batch's max timestamp is at
// or after ts, with that timestamp (ok false: none).
func (p *Partition) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool) {
	return p.log.OffsetForTimestamp(ts)
}

// MaxTimestamp is the offset and value of the largest timestamp in the
// log (offset -1: none).
func (p *Partition) MaxTimestamp() (offset, timestamp int64) { return p.log.MaxTimestamp() }

// SegmentStats lists the log's segments with their sizes and last
// modification times, oldest first (Kafka's legacy ListOffsets v0).
func (p *Partition) SegmentStats() []mlog.SegmentStat { return p.log.SegmentStats() }

// Size is the bytes of the partition's segment files.
func (p *Partition) Size() int64 { return p.log.Size() }

// ReadRaw returns whole batches from offset up to (not including)
// maxOffset, at most maxBytes but at least one batch, regardless of the
// high watermark: for tools and tests that look at what the log holds.
func (p *Partition) ReadRaw(offset, maxOffset int64, maxBytes int) ([]byte, error) {
	return p.log.ReadUpTo(offset, maxOffset, maxBytes, true)
}

// Flush fsyncs everything appended so far.
func (p *Partition) Flush() error { return p.log.Flush() }

// FlushTo makes every record below offset durable with the group commit
// of log.flush.interval.messages=1: the segment's data (and its
// transaction index) in one fsync. The offset and time indexes, the
// leader-epoch checkpoint and the recovery point wait for the next full
// flush; the recovery point never passes what they cover, so an unclean
// open re-reads these records and rebuilds them. A full Flush costs up
// to six fsyncs and a directory sync; a failover of many partitions
// (STOPPING's barrier) pays one.
func (p *Partition) FlushTo(offset int64) error { return p.log.WaitFlushed(offset) }

// ApplyRetention deletes the segments retention.ms and retention.bytes
// expire and returns how many went.
func (p *Partition) ApplyRetention() (int, error) { return p.log.ApplyRetention() }

// BarrierAt reports whether the batch at offset is a MIRROR_PID_RESET
// barrier.
func (p *Partition) BarrierAt(offset int64) (bool, error) {
	if offset >= p.Offsets().LogEnd {
		return false, nil
	}
	raw, err := p.log.Read(offset, 1, true)
	if err != nil {
		return false, err
	}
	it := batch.NewIter(raw)
	b, h, ok := it.Next()
	return ok && h.BaseOffset == offset && batch.IsBarrier(&h, b), nil
}

// Offline returns the storage failure that took the partition's log
// offline for writes (until a restart), or nil.
func (p *Partition) Offline() error { return p.log.Offline() }

// RetryableStorageFailures counts the storage failures that left the
// partition's log writable (a failed roll, a write refused for lack of
// space).
func (p *Partition) RetryableStorageFailures() int64 { return p.log.RetryableFailures() }
