package partition

import "github.com/minibroker/minibroker/internal/psm"

// Producers returns copies of the partition's producer-state entries,
// sorted by producer id (DescribeProducers).
func (p *Partition) Producers() []psm.Entry {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.psm.Entries()
}
