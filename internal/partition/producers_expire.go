package partition

// ExpireProducers forgets producers idle past producer.id.expiration.ms
// (never one with an open transaction), as Kafka's periodic
// removeExpiredProducers does. It returns how many were removed.
func (p *Partition) ExpireProducers() int {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if _, _, _, closed := p.writeState(); closed {
		return 0
	}
	return p.psm.RemoveExpired(p.now().UnixMilli())
}
