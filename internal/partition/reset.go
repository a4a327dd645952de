package partition

import (
	"fmt"

	"github.com/minibroker/minibroker/internal/psm"
)

// TruncateFullyAndStartAt empties the partition and restarts its log at
// offset (a mirror whose source's log start passed it: the gap cannot be
// filled). Producer state is cleared with the log.
func (p *Partition) TruncateFullyAndStartAt(offset int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.snapshotWriteMu.Lock()
	defer p.snapshotWriteMu.Unlock()
	p.dropRollSnapshotsAfter(-1)
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return fmt.Errorf("restart log at %d: %w", offset, err)
	}
	if err := psm.DeleteSnapshotsAfter(p.fs, p.dir, -1); err != nil {
		return fmt.Errorf("drop producer snapshots: %w", err)
	}
	p.psm.Clear()
	p.psm.SetLastOffset(offset)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.highWatermark = offset
	p.updateLastStableLocked()
	p.signalLocked()
	return nil
}
