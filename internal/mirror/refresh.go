package mirror

import (
	"context"
	"time"

	"go.uber.org/zap"
)

func (m *Manager) startRefresher(rt *runtime) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.startRefresherLocked(rt)
}

// startRefresherLocked starts the mirror's metadata loop, which picks up
// partitions added at the source. It exits when rt.stop closes.
func (m *Manager) startRefresherLocked(rt *runtime) {
	go func() {
		defer close(rt.done)
		// mirror.metadata.refresh.interval.ms, read again after each
		// refresh so that a change applies from the next one.
		t := time.NewTimer(rt.settings().MetadataRefresh)
		defer t.Stop()
		sync := time.NewTicker(m.opts.OffsetSyncInterval)
		defer sync.Stop()
		for {
			select {
			case <-rt.stop:
				return
			case <-t.C:
				m.refresh(rt)
				t.Reset(rt.settings().MetadataRefresh)
			case <-sync.C:
				ctx, cancel := m.runtimeContext(rt, 10*time.Second)
				if _, err := m.syncGroupOffsets(ctx, rt); err != nil {
					m.logger.Debug("group offset sync", zap.String("mirror", rt.spec.Name), zap.Error(err))
				}
				cancel()
			}
		}
	}()
}

// refresh grows locally every mirrored topic whose source gained
// partitions, and starts fetchers for the new ones.
func (m *Manager) refresh(rt *runtime) {
	m.mu.Lock()
	var topics []string
	for topic, ts := range rt.spec.Topics {
		for _, rec := range ts.Partitions {
			if rec.State.active() {
				topics = append(topics, topic)
				break
			}
		}
	}
	m.mu.Unlock()
	if len(topics) == 0 {
		return
	}
	src, err := m.source(rt)
	if err != nil {
		return
	}
	ctx, cancel := m.runtimeContext(rt, 10*time.Second)
	defer cancel()
	for _, topic := range topics {
		info, err := src.describeTopic(ctx, topic)
		if err != nil {
			continue
		}
		if err := m.checkIdentity(rt, topic, info); err != nil {
			m.failIdentity(rt, topic, err) // another cluster, or the topic recreated
			continue
		}
		m.mu.Lock()
		known := len(rt.spec.Topics[topic].Partitions)
		m.mu.Unlock()
		if len(info.Partitions) <= known {
			continue
		}
		m.logger.Info("source topic gained partitions", zap.String("mirror", rt.spec.Name), zap.String("topic", topic),
			zap.Int("from", known), zap.Int("to", len(info.Partitions)))
		if err := m.startTopic(ctx, rt, src, topic); err != nil {
			m.logger.Warn("mirroring new partitions failed", zap.String("topic", topic), zap.Error(err))
		}
	}
}

// runtimeContext is a context with a timeout that also ends when the
// mirror stops.
func (m *Manager) runtimeContext(rt *runtime, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-rt.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// SyncGroupOffsets runs one group-offset sync for the mirror now (the
// loop runs it every OffsetSyncInterval) and returns how many groups it
// updated.
func (m *Manager) SyncGroupOffsets(ctx context.Context, name string) (int, error) {
	rt, err := m.runtime(name)
	if err != nil {
		return 0, err
	}
	return m.syncGroupOffsets(ctx, rt)
}
