package mirror

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// startRefresher starts the mirror's metadata loop (refresh) and its
// group offset sync, once per mirror (rt.done is closed when it exits).
// It exits when rt.stop closes. No lock is needed.
func (m *Manager) startRefresher(rt *liveMirror) {
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

// refresh looks at the source's topics (discover.go): partitions added to
// mirrored topics, topics deleted, configs changed, and, when the mirror
// follows its topic filters, new topics.
func (m *Manager) refresh(rt *liveMirror) {
	rt.mu.Lock()
	work := rt.spec.AutoTopics
	for _, ts := range rt.spec.Topics {
		work = work || ts.Pending || ts.mirrored()
	}
	rt.mu.Unlock()
	if !work {
		return
	}
	src, err := m.source(rt)
	if err != nil {
		return
	}
	ctx, cancel := m.runtimeContext(rt, time.Minute)
	defer cancel()
	m.refreshTopics(ctx, rt, src)
	m.syncACLs(ctx, rt, src)
}

// runtimeContext is a context with a timeout that also ends when the
// mirror stops.
func (m *Manager) runtimeContext(rt *liveMirror, d time.Duration) (context.Context, context.CancelFunc) {
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
