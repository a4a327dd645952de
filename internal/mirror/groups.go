package mirror

import (
	"context"
	"fmt"
	"regexp"
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
}

// groupFilter selects the source groups whose offsets are copied:
// include patterns (default: all) minus exclude patterns, each a regular
// expression matched against the whole group id.
type groupFilter struct{ include, exclude []*regexp.Regexp }

func compileFilter(include, exclude []string) (groupFilter, error) {
	var f groupFilter
	if len(include) == 0 {
		include = []string{".*"}
	}
	for _, lists := range []struct {
		in  []string
		out *[]*regexp.Regexp
	}{{include, &f.include}, {exclude, &f.exclude}} {
		for _, p := range lists.in {
			re, err := regexp.Compile("^(?:" + p + ")$")
			if err != nil {
				return f, fmt.Errorf("%w: group pattern %q: %v", ErrBadRequest, p, err)
			}
			*lists.out = append(*lists.out, re)
		}
	}
	return f, nil
}

func (f groupFilter) match(group string) bool {
	in := false
	for _, re := range f.include {
		in = in || re.MatchString(group)
	}
	for _, re := range f.exclude {
		if re.MatchString(group) {
			return false
		}
	}
	return in
}

// syncGroupOffsets copies the committed offsets of the source's groups for
// the topics this mirror is mirroring into the local group coordinator,
// clamped to the local log start and end, skipping groups that have
// members locally (they commit for themselves). Consumers that fail over
// resume where they were at the source.
func (m *Manager) syncGroupOffsets(ctx context.Context, rt *runtime) (synced int, err error) {
	if m.opts.Groups == nil {
		return 0, nil
	}
	m.mu.Lock()
	filter, ferr := compileFilter(rt.spec.GroupsInclude, rt.spec.GroupsExclude)
	mirrored := map[string]bool{}
	for topic, ts := range rt.spec.Topics {
		for _, rec := range ts.Partitions {
			if rec.State == Mirroring || rec.State == Paused {
				mirrored[topic] = true
			}
		}
	}
	m.mu.Unlock()
	if ferr != nil || len(mirrored) == 0 {
		return 0, ferr
	}
	src, err := m.source(rt)
	if err != nil {
		return 0, err
	}
	listed, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, src.cl)
	if err != nil {
		return 0, fmt.Errorf("source list groups: %w", err)
	}
	for _, g := range listed.Groups {
		if !filter.match(g.Group) || m.opts.Groups.GroupIsActive(g.Group) {
			continue
		}
		offsets, err := m.sourceGroupOffsets(ctx, src, g.Group, mirrored)
		if err != nil {
			m.logger.Debug("source group offsets", zap.String("group", g.Group), zap.Error(err))
			continue
		}
		if len(offsets) == 0 {
			continue
		}
		if err := m.opts.Groups.CommitOffsetsAdmin(g.Group, offsets); err != nil {
			m.logger.Debug("local group offsets not synced", zap.String("group", g.Group), zap.Error(err))
			continue
		}
		synced++
	}
	m.metrics.groupsSynced.WithLabelValues(rt.spec.Name).Add(float64(synced))
	return synced, nil
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
		parts := m.local.Partitions(topic)
		if int(partition) >= len(parts) {
			return
		}
		o := parts[partition].Offsets()
		om := coordinator.OffsetAndMetadata{Offset: min(max(offset, o.LogStart), o.LogEnd), LeaderEpoch: epoch,
			CommitTimestamp: time.Now().UnixMilli()}
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
