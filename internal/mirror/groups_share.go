package mirror

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/coordinator"
)

// ShareOffsets is the local share coordinator, as the share group offset
// sync needs it (KIP-1279 syncs share groups' start offsets too).
type ShareOffsets interface {
	// ShareGroupActive reports a local share group with members.
	ShareGroupActive(group string) bool
	// AlterShareOffsets sets share partitions' start offsets (as
	// AlterShareGroupOffsets), durably.
	AlterShareOffsets(group string, offsets map[coordinator.TopicPartition]int64) error
	// ClampShareOffsets cuts every share group's share partitions at
	// ends[tp], durably: a start offset above it comes down to it and
	// in-flight state past it is dropped. It answers how many changed.
	ClampShareOffsets(ends map[coordinator.TopicPartition]int64) (int, error)
}

// syncShareGroups copies the source's share groups' start offsets (SPSO)
// for the partitions this mirror is mirroring (MIRRORING or PAUSED) into
// the local share groups, clamped to the local log as group offsets are,
// skipping share groups with members here. It answers how many groups it
// synced. A source that serves no share groups lists none.
func (m *Manager) syncShareGroups(ctx context.Context, rt *liveMirror, src *source, mirrored map[string]bool) (int, error) {
	if m.opts.ShareGroups == nil {
		return 0, nil
	}
	filter := rt.settings()
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"share"}
	listed, err := lreq.RequestWith(ctx, src.cl)
	if err != nil {
		return 0, fmt.Errorf("source list share groups: %w", err)
	}
	if err := kerr.ErrorForCode(listed.ErrorCode); err != nil {
		return 0, fmt.Errorf("source list share groups: %w", err)
	}
	synced := 0
	for _, g := range listed.Groups {
		if g.GroupType != "share" || !filter.GroupSelected(g.Group) {
			continue
		}
		if m.opts.ShareGroups.ShareGroupActive(g.Group) {
			m.groupSkipped(rt, g.Group, "share", true)
			continue
		}
		m.groupSkipped(rt, g.Group, "share", false)
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = g.Group // null topics: every partition the group has
		req.Groups = append(req.Groups, rg)
		resp, err := req.RequestWith(ctx, src.cl)
		if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			m.logger.Debug("source share group offsets", zap.String("group", g.Group), zap.Error(err))
			continue
		}
		offsets := map[coordinator.TopicPartition]int64{}
		for _, t := range resp.Groups[0].Topics {
			if !mirrored[t.Topic] {
				continue
			}
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 && p.StartOffset >= 0 {
					offsets[coordinator.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.StartOffset
				}
			}
		}
		if n, err := m.alterSynced(rt, g.Group, offsets); err != nil {
			m.logger.Debug("local share group offsets not synced", zap.String("group", g.Group), zap.Error(err))
		} else if n > 0 {
			synced++
		}
	}
	return synced, nil
}

// alterSynced sets a share group's start offsets for the partitions still
// mirrored, each clamped to the local log (max(log start, min(offset,
// log end))), under groupSyncMu as commitSynced.
func (m *Manager) alterSynced(rt *liveMirror, group string, offsets map[coordinator.TopicPartition]int64) (int, error) {
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
	for tp, off := range offsets {
		parts := m.local.Partitions(tp.Topic)
		if int(tp.Partition) >= len(parts) {
			delete(offsets, tp)
			continue
		}
		o := parts[tp.Partition].Offsets()
		offsets[tp] = min(max(off, o.LogStart), o.LogEnd)
	}
	if len(offsets) == 0 {
		return 0, nil
	}
	return len(offsets), m.opts.ShareGroups.AlterShareOffsets(group, offsets)
}
