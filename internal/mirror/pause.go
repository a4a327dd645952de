package mirror

// Pause stops fetching without leaving the mirrored state.
func (m *Manager) Pause(name string, topics []string) error { return m.setPaused(name, topics, true) }

// Resume restarts fetching of paused partitions.
func (m *Manager) Resume(name string, topics []string) error { return m.setPaused(name, topics, false) }

func (m *Manager) setPaused(name string, topics []string, paused bool) error {
	rt, err := m.runtime(name)
	if err != nil {
		return err
	}
	from, ev := Mirroring, EvPause
	if !paused {
		from, ev = Paused, EvResume
	}
	tps, err := m.partitionsOf(rt, topics, from, Preparing)
	if err != nil {
		return err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	snap := snapshotLocked(rt, tps)
	var changed []tp
	for _, k := range tps {
		rec := rt.spec.Topics[k.topic].Partitions[k.partition]
		// A pause or resume in PREPARING stays there: the fetcher
		// remembers it and applies it once prepared.
		next, _, err := step(*rec, coreEvent{Kind: ev})
		if err != nil {
			continue
		}
		*rec = next
		changed = append(changed, k)
	}
	// Persisted before the fetchers act on it.
	if err := m.saveOrRestoreLocked(rt, snap); err != nil {
		return err
	}
	for _, k := range changed {
		if f := rt.fetchers[k]; f != nil {
			f.setPaused(paused)
		}
	}
	return nil
}
