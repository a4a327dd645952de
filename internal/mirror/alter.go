package mirror

import (
	"fmt"
	"maps"

	"go.uber.org/zap"
)

// AlterSourceConfig replaces a mirror's source security settings (all of
// them: settings not given go back to their defaults) and reconnects: the
// running fetchers are stopped, the source client is closed, and a new one
// is made from the new settings. Partitions that FAILED because the source
// refused the old settings go back to PREPARING, so a mirror failed for a
// wrong password recovers once the password is fixed; their local logs are
// kept and aligned with the source as at any start. Partitions that are
// STOPPED or STOPPING are not touched.
func (m *Manager) AlterSourceConfig(name string, settings map[string]string) error {
	settings = cleanSourceConfig(settings)
	if _, err := parseSourceConfig(settings); err != nil {
		return err
	}
	rt, err := m.runtime(name)
	if err != nil {
		return err
	}

	// 1. Persist the new settings; take the fetchers and the client.
	rt.mu.Lock()
	old := rt.spec.SourceConfig
	rt.spec.SourceConfig = settings
	if err := m.saveSourceConfigsLocked(rt); err != nil {
		rt.spec.SourceConfig = old
		rt.mu.Unlock()
		return err
	}
	fetchers := make([]*fetcher, 0, len(rt.fetchers))
	for k, f := range rt.fetchers {
		fetchers = append(fetchers, f)
		delete(rt.fetchers, k)
	}
	src := rt.src
	rt.src = nil
	rt.mu.Unlock()
	m.logger.Info("mirror source config changed; reconnecting", zap.String("mirror", name),
		zap.Any("source_config", RedactSourceConfig(settings)))

	// 2. Stop them (outside the lock: a fetcher takes it to exit).
	for _, f := range fetchers {
		f.close()
	}
	if src != nil {
		src.close()
	}

	// 3. Start a fetcher for every partition still fed by one, and for
	// those the old settings failed. A Stop that ran meanwhile has set
	// its partitions to STOPPING and is skipped here.
	rt.mu.Lock()
	defer rt.mu.Unlock()
	select {
	case <-rt.stop:
		return fmt.Errorf("%w: %s", ErrNotFound, name) // deleted or closing meanwhile
	default:
	}
	// The restarts are persisted before their fetchers start.
	var ks []tp
	for topic, ts := range rt.spec.Topics {
		for idx := range ts.Partitions {
			ks = append(ks, tp{topic, idx})
		}
	}
	snap := snapshotLocked(rt, ks)
	restarted := 0
	for _, k := range ks {
		rec := rt.spec.Topics[k.topic].Partitions[k.partition]
		if rec.SecurityFailure {
			if next, _, err := step(*rec, coreEvent{Kind: EvRestart}); err == nil {
				*rec = next
				restarted++
			}
		}
	}
	serr := m.saveOrRestoreLocked(rt, snap)
	for _, k := range ks {
		rec := rt.spec.Topics[k.topic].Partitions[k.partition]
		parts := m.local.Partitions(k.topic)
		if int(k.partition) >= len(parts) || rec.State == Stopping || !rec.State.active() {
			continue
		}
		m.startFetcherLocked(rt, k.topic, k.partition, parts[k.partition], rec.State == Paused)
	}
	if restarted > 0 && serr == nil {
		m.logger.Info("restarting partitions that failed on the source's security", zap.String("mirror", name),
			zap.Int("partitions", restarted))
	}
	return serr
}

// SourceConfigDiffers reports whether a mirror's source settings differ
// from settings (a missing mirror differs).
func (m *Manager) SourceConfigDiffers(name string, settings map[string]string) bool {
	settings = cleanSourceConfig(settings)
	rt, err := m.runtime(name)
	if err != nil {
		return true
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return !maps.Equal(rt.spec.SourceConfig, settings)
}

// AlterSettings changes a running mirror's settings: set gives new values,
// reset names settings that go back to their default; the others keep
// theirs. Unknown names, bad values and settings that cannot change while
// the mirror exists are refused (ErrBadRequest) and nothing changes. The
// new settings are persisted, then used: the topic filters and the
// property exclusions from the next refresh, the refresh interval after
// the refresh in progress, the fetch long poll from the next fetch.
func (m *Manager) AlterSettings(name string, set map[string]string, reset []string) error {
	rt, err := m.runtime(name)
	if err != nil {
		return err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	config, err := alterSettings(rt.spec.Config, set, reset)
	if err != nil {
		return err
	}
	resolved, err := resolveSettings(config, m.defaultOverrides())
	if err != nil {
		return err
	}
	old := rt.spec.Config
	rt.spec.Config = config
	if err := m.saveLocked(rt); err != nil {
		rt.spec.Config = old
		return err
	}
	rt.cfg.Store(&resolved)
	m.logger.Info("mirror settings changed", zap.String("mirror", name), zap.Any("config", RedactSettings(config)))
	return nil
}

// SettingsDiffer reports whether the settings of set differ from the
// mirror's (a missing mirror differs).
func (m *Manager) SettingsDiffer(name string, set map[string]string) bool {
	rt, err := m.runtime(name)
	if err != nil {
		return true
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for k, v := range cleanSettings(set) {
		if cur, ok := rt.spec.Config[k]; !ok || cur != v {
			return true
		}
	}
	return false
}
