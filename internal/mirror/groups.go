package mirror

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/coordinator"
)

// GroupOffsets is the local group coordinator, as the offset sync needs it.
type GroupOffsets interface {
	GroupIsActive(group string) bool
	CommitOffsetsAdmin(group string, offsets map[coordinator.TopicPartition]coordinator.OffsetAndMetadata) error
	// ClampOffsets lowers every group's offset above ends[tp] to it,
	// durably, and answers how many it changed.
	ClampOffsets(ends map[coordinator.TopicPartition]int64) (int, error)
}

// syncGroupOffsets copies the committed offsets of the source's groups for
// the partitions this mirror is mirroring into the local group coordinator,
// clamped to the local log start and end, skipping groups that have
// members locally (they commit for themselves). Consumers that fail over
// resume where they were. This is KIP-1279's rule, with the clamp its
// discussion settled on: max(local log start, min(source offset, local log
// end)), since re-reading records is better than skipping them.
//
// The network part runs unlocked; the commit runs under groupSyncMu and
// only for partitions still MIRRORING or PAUSED, so a sync that races a
// failover either commits before STOPPING clamps (which then corrects it)
// or sees STOPPING and leaves the partition alone.
func (m *Manager) syncGroupOffsets(ctx context.Context, rt *liveMirror) (synced int, err error) {
	if m.opts.Groups == nil {
		return 0, nil
	}
	filter := rt.settings() // mirror.groups.include and mirror.groups.exclude
	rt.mu.Lock()
	mirrored := map[string]bool{}
	for topic, ts := range rt.spec.Topics {
		for _, rec := range ts.Partitions {
			if rec.State.syncsOffsets() {
				mirrored[topic] = true
			}
		}
	}
	rt.mu.Unlock()
	if len(mirrored) == 0 {
		return 0, nil
	}
	src, err := m.source(rt)
	if err != nil {
		return 0, err
	}
	m.syncSourceEpochs(ctx, rt, src, mirrored)
	// Both kinds of consumer group (KIP-1279 syncs offsets whatever the
	// protocol): classic groups and KIP-848 consumer groups. ListGroups
	// v5 names the types; an older source lists every group, and a group
	// that has no offsets (another kind) answers none.
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"classic", "consumer"}
	listed, err := lreq.RequestWith(ctx, src.cl)
	if err != nil {
		return 0, fmt.Errorf("source list groups: %w", err)
	}
	if err := kerr.ErrorForCode(listed.ErrorCode); err != nil {
		return 0, fmt.Errorf("source list groups: %w", err)
	}
	for _, g := range listed.Groups {
		if !filter.GroupSelected(g.Group) {
			continue
		}
		if m.opts.Groups.GroupIsActive(g.Group) {
			m.groupSkipped(rt, g.Group, g.GroupType, true)
			continue
		}
		m.groupSkipped(rt, g.Group, g.GroupType, false)
		offsets, err := m.sourceGroupOffsets(ctx, src, g.Group, mirrored)
		if err != nil {
			m.logger.Debug("source group offsets", zap.String("group", g.Group), zap.Error(err))
			continue
		}
		if err := m.commitSynced(rt, g.Group, offsets); err != nil {
			m.logger.Debug("local group offsets not synced", zap.String("group", g.Group), zap.Error(err))
			continue
		}
		if len(offsets) > 0 {
			synced++
			rt.mu.Lock()
			if rt.groupSyncedAt == nil {
				rt.groupSyncedAt = map[string]int64{}
			}
			rt.groupSyncedAt[g.Group] = time.Now().UnixMilli()
			rt.mu.Unlock()
		}
	}
	shares, err := m.syncShareGroups(ctx, rt, src, mirrored)
	if err != nil {
		m.logger.Debug("share group offsets not synced", zap.String("mirror", rt.spec.Name), zap.Error(err))
	}
	synced += shares
	m.metrics.groupsSynced.WithLabelValues(rt.spec.Name).Add(float64(synced))
	return synced, nil
}

// groupSkipped records whether the sync left a source group alone
// because the group has members here (they commit for themselves; the
// KIP's reviewers asked that this be logged): logged once each time a
// group starts being skipped.
func (m *Manager) groupSkipped(rt *liveMirror, group, typ string, skipped bool) {
	rt.mu.Lock()
	was := rt.groupsSkipped[group]
	if skipped {
		if rt.groupsSkipped == nil {
			rt.groupsSkipped = map[string]bool{}
		}
		rt.groupsSkipped[group] = true
	} else {
		delete(rt.groupsSkipped, group)
	}
	rt.mu.Unlock()
	if skipped && !was {
		m.logger.Info("group offsets not synced: the group is active on this cluster (its members commit for themselves)",
			zap.String("mirror", rt.spec.Name), zap.String("group", group), zap.String("type", typ))
	}
}

// commitSynced commits a source group's offsets for the partitions still
// mirrored, each clamped to the local log; it drops the others (offsets
// is changed).
func (m *Manager) commitSynced(rt *liveMirror, group string, offsets map[coordinator.TopicPartition]coordinator.OffsetAndMetadata) error {
	m.groupSyncMu.Lock()
	defer m.groupSyncMu.Unlock()
	rt.mu.Lock()
	for tp := range offsets {
		ts := rt.spec.Topics[tp.Topic]
		if ts == nil || ts.Partitions[tp.Partition] == nil || !ts.Partitions[tp.Partition].State.syncsOffsets() {
			delete(offsets, tp)
		}
	}
	rt.mu.Unlock()
	for tp, om := range offsets {
		parts := m.local.Partitions(tp.Topic)
		if int(tp.Partition) >= len(parts) {
			delete(offsets, tp)
			continue
		}
		p := parts[tp.Partition]
		o := p.Offsets()
		clamped := min(max(om.Offset, o.LogStart), o.LogEnd)
		if clamped != om.Offset && !m.knobs.hooks.KeepSourceLeaderEpoch() {
			// A clamped offset carries the local epoch (KIP-1279): the
			// source's is that of a batch this log does not have yet,
			// possibly above every epoch here. The epoch of the local
			// batch before the offset is one a validating consumer's
			// OffsetForLeaderEpoch finds ending at or past it.
			om.LeaderEpoch = -1
			if clamped > o.LogStart {
				om.LeaderEpoch = p.EpochAt(clamped - 1)
			}
		}
		om.Offset = clamped
		offsets[tp] = om
	}
	if len(offsets) == 0 {
		return nil
	}
	return m.opts.Groups.CommitOffsetsAdmin(group, offsets)
}

// clampGroupOffsets is STOPPING's step after the truncation: every local
// group's committed offset for a partition above where the failover cut
// it comes down to the cut (the barrier's offset), durably, before the
// barrier is written and the partition becomes writable. Offsets synced
// while mirroring were clamped to the log end then, but the truncation to
// the local LSO can cut below them; a consumer resuming from such an
// offset would skip the records written there after the failover. Share
// groups' start offsets are cut the same way (ShareOffsets).
// Idempotent, so a resumed STOPPING runs it again.
func (m *Manager) clampGroupOffsets(ends map[coordinator.TopicPartition]int64) (int, error) {
	if m.opts.Groups == nil || len(ends) == 0 {
		return 0, nil
	}
	if m.knobs.hooks.SkipGroupClamp() {
		m.logger.Warn("NEGATIVE CONTROL: group offsets not clamped at failover")
		return 0, nil
	}
	m.groupSyncMu.Lock()
	defer m.groupSyncMu.Unlock()
	n, err := m.opts.Groups.ClampOffsets(ends)
	if err != nil || m.opts.ShareGroups == nil {
		return n, err
	}
	// Share groups' start offsets likewise: a share group resuming
	// above the cut would skip the records written there after the
	// failover, and its in-flight state past the cut describes records
	// that are gone.
	k, err := m.opts.ShareGroups.ClampShareOffsets(ends)
	return n + k, err
}

// syncSourceEpochs asks the source for the leader epochs of the mirrored
// topics' partitions and raises the local ones to them (epoch.go: the
// KIP's periodic bump), before offsets committed at those epochs are
// copied. A source that does not answer leaves them: the fetchers' next
// Metadata answer raises them.
func (m *Manager) syncSourceEpochs(ctx context.Context, rt *liveMirror, src *source, mirrored map[string]bool) {
	if m.knobs.hooks.KeepSourceLeaderEpoch() {
		return
	}
	topics := slices.Sorted(maps.Keys(mirrored))
	infos, err := src.describeTopics(ctx, topics)
	if err != nil {
		m.logger.Debug("source leader epochs", zap.Error(err))
		return
	}
	for _, topic := range topics {
		info, ok := infos[topic]
		if !ok || m.checkIdentity(rt, topic, info) != nil {
			continue // the fetchers report a topic gone or changed
		}
		m.noteSourceEpochs(rt, topic, info)
	}
}

func (m *Manager) sourceGroupOffsets(ctx context.Context, src *source, group string, mirrored map[string]bool) (map[coordinator.TopicPartition]coordinator.OffsetAndMetadata, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, src.cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	out := map[coordinator.TopicPartition]coordinator.OffsetAndMetadata{}
	add := func(topic string, partition int32, offset int64, epoch int32, meta *string, code int16) {
		if !mirrored[topic] || code != 0 || offset < 0 {
			return
		}
		om := coordinator.OffsetAndMetadata{Offset: offset, LeaderEpoch: epoch, CommitTimestamp: time.Now().UnixMilli()}
		if meta != nil {
			om.Metadata = *meta
		}
		out[coordinator.TopicPartition{Topic: topic, Partition: partition}] = om
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			add(t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode)
		}
	}
	for _, g := range resp.Groups {
		if !strings.EqualFold(g.Group, group) {
			continue
		}
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return nil, err
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				add(t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode)
			}
		}
	}
	return out, nil
}
