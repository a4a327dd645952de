package mirror

import (
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/partition"
)

// KIP-1279's leader-epoch invariant: a mirrored partition's leader epoch
// (what this node's Metadata answers, DLE) is never below the source's
// (SLE). Mirrored batches keep the source's epochs, so DLE follows them,
// but the source's epoch can rise with no batch (a leader election with
// no write since, or while the mirror lags), and an offset committed at
// the source at that epoch names an epoch this node does not know: a
// consumer that validates it (KIP-320: librdkafka after a seek, Kafka's
// Java consumer, which then waits for metadata at that epoch) finds no
// such epoch and resets, or keeps refreshing metadata.
//
// The mirror raises DLE to SLE each time the source answers SLE: each
// Metadata answer a fetcher reads before it joins its broker loop (the
// KIP's reactive bump), each metadata refresh of the mirror's topics
// (mirror.metadata.refresh.interval.ms: paused partitions too) and each
// group sync (the KIP's periodic bump, before the offsets are copied).
// A fetcher does not wait for those when SLE rises while it fetches: its
// fetches carry SLE as CurrentLeaderEpoch, as Kafka's replica fetcher
// sends its own, so the source's leader answers the first fetch after
// its epoch rose FENCED_LEADER_EPOCH, with or without a record since
// (UNKNOWN_LEADER_EPOCH when the leader has not reached the epoch the
// metadata said: backed off and asked again). The fenced partition
// leaves its broker loop, and its fetcher reads the metadata again at
// once and raises DLE before it fetches again: DLE follows SLE within
// one long poll (mirror.fetch.wait.max.ms), not a refresh interval
// (TestSourceEpochRiseFencesFetch; with -1 sent, the negative control,
// DLE stays below). The KIP's proactive bump (ahead of SLE) is not done.
// The raised epoch is persisted in the partition's record first
// (source_leader_epoch) and raised again at start-up. And a synced offset
// that the clamp lowered to the local log end carries the local epoch,
// the epoch of the local batch before it (groups.go).

// noteSourceEpoch steps the partition's record with the source's leader
// epoch: when it rose, the record is saved, then the partition's epoch
// raised.
func (m *Manager) noteSourceEpoch(rt *liveMirror, k tp, p *partition.Partition, epoch int32) error {
	if epoch < 0 || m.knobs.hooks.KeepSourceLeaderEpoch() {
		return nil
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	ts := rt.spec.Topics[k.topic]
	if ts == nil || ts.Partitions[k.partition] == nil {
		return nil
	}
	rec := ts.Partitions[k.partition]
	next, effs, err := step(*rec, coreEvent{Kind: EvSourceEpoch, Epoch: epoch})
	if err != nil || len(effs) == 0 {
		return err
	}
	snap := snapshotLocked(rt, []tp{k})
	*rec = next
	for _, e := range effs {
		switch e.Kind {
		case effPersist:
			if err := m.saveOrRestoreLocked(rt, snap); err != nil {
				return err
			}
		case effRaiseEpoch:
			p.RaiseLeaderEpoch(e.Epoch)
		}
	}
	return nil
}

// noteSourceEpochs steps each local partition of topic with the leader
// epoch info says the source's has (a Metadata answer).
func (m *Manager) noteSourceEpochs(rt *liveMirror, topic string, info topicInfo) {
	if m.knobs.hooks.KeepSourceLeaderEpoch() {
		return
	}
	parts := m.local.Partitions(topic)
	for idx, epoch := range info.Epochs {
		if idx < 0 || int(idx) >= len(parts) {
			continue
		}
		if err := m.noteSourceEpoch(rt, tp{topic, idx}, parts[idx], epoch); err != nil {
			m.logger.Warn("persisting the source's leader epoch failed", zap.String("mirror", rt.spec.Name),
				zap.String("topic", topic), zap.Int32("partition", idx), zap.Error(err))
		}
	}
}
