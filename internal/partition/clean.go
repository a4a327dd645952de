package partition

import (
	mlog "github.com/minibroker/minibroker/internal/log"
)

// Compaction of a partition's log (cleanup.policy=compact): the log's
// cleaner does the work (internal/log/clean.go); the partition gives it
// what only producer state knows, and the barrier's rule.

// Clean runs one cleaning pass of the log with c: up to the last stable
// offset, keeping the last batch of every producer in the producer state
// (Kafka's lastRecordsOfActiveProducers), and keeping a MIRROR_PID_RESET
// barrier while anything it resets is kept (barrierDiscardable). force
// cleans below min.cleanable.dirty.ratio. No partition lock is held while
// the log is read and rewritten; the log swaps the cleaned segments in
// under its own locks, without an fsync under them.
func (p *Partition) Clean(c *mlog.Cleaner, force bool) (mlog.CleanStats, error) {
	req := mlog.CleanRequest{Now: p.now(), Force: force, Producers: map[int64]mlog.ProducerLast{},
		BarrierDiscardable: barrierDiscardable}
	if p.knobs.cleanDropsBarriers {
		req.BarrierDiscardable = func(bool) bool { return true }
	}
	func() {
		p.appendMu.Lock()
		defer p.appendMu.Unlock()
		for _, e := range p.psm.Entries() {
			last := mlog.ProducerLast{LastDataOffset: -1, Epoch: e.Epoch}
			if n := len(e.Batches); n > 0 {
				last.LastDataOffset = e.Batches[n-1].LastOffset
			}
			req.Producers[e.ProducerID] = last
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		req.FirstUnstable = p.lastStable
	}()
	return c.Clean(p.log, req)
}

// Cleanable is the log's dirty section and ratio now (the cleaner
// manager picks the filthiest log).
func (p *Partition) Cleanable() (mlog.Cleanable, error) {
	p.mu.Lock()
	lso := p.lastStable
	p.mu.Unlock()
	return p.log.Cleanable(p.now(), lso)
}

// CleanerCheckpoint is the log's first dirty offset.
func (p *Partition) CleanerCheckpoint() (int64, error) { return p.log.CleanerCheckpoint() }

// barrierDiscardable is minibroker's rule for the MIRROR_PID_RESET
// barrier under compaction: a barrier may be removed (once its delete
// horizon has passed, as a transaction marker) only when no batch with a
// producer id is kept below it, i.e. when nothing it resets is left in
// the log. So replaying the cleaned log from its start with every
// snapshot deleted reaches the producer state the uncleaned log gives:
// each producer batch kept below a kept barrier is reset by it, as
// before cleaning, and a removed barrier had nothing below it to reset.
// (The producer's last batch, kept by Kafka's rule, is above the last
// barrier for every producer in the state; a producer batch below a
// barrier is kept only as the latest value of a key, or as the last
// batch of its group, and keeps the barrier with it.)
//
// Kafka's cleaner does not know control type 7 and keeps every control
// batch of an unknown type for ever; KIP-1279 does not say what
// compaction does with the barrier.
func barrierDiscardable(producerKeptBelow bool) bool { return !producerKeptBelow }

// Compacted reports whether cleanup.policy holds compact.
func (p *Partition) Compacted() bool { return p.config().Log.Compact }

// MinCleanableRatio is the topic's min.cleanable.dirty.ratio.
func (p *Partition) MinCleanableRatio() float64 { return p.config().Log.MinCleanableDirtyRatio }
