package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"
)

// Guarded failback. Starting a mirror into a partition whose local log
// goes on past where it diverges from the source (the failback case: this
// cluster wrote after the other took over) cuts those records. `mirror
// start` works the cut out first, with the same OffsetForLeaderEpoch
// exchange PREPARING then uses (divergenceCut), before it changes
// anything; it refuses when the cut removes data (records or transaction
// markers: a MIRROR_PID_RESET barrier alone is no data) unless
// --allow-truncate is given, and --dry-run only reports. The permission is
// recorded per partition as the report's cut, so PREPARING cuts exactly
// what was reported or nothing (a log that changed since fails the
// partition instead).

// ErrRefused is wrapped by the refusals of start: a truncation not
// allowed, a mirror loop, a source that is not the mirror's (409).
var ErrRefused = errors.New("mirror: refused")

// StartOptions are `mirror start`'s flags.
type StartOptions struct {
	// AllowTruncate lets the start cut local data past the divergence
	// point (the failback case).
	AllowTruncate bool
	// DryRun computes the report and changes nothing.
	DryRun bool
}

// StartReport is what a start cuts, per partition whose log it would
// shorten (records, markers or barriers).
type StartReport struct {
	Mirror        string                `json:"mirror"`
	DryRun        bool                  `json:"dry_run,omitempty"`
	AllowTruncate bool                  `json:"allow_truncate,omitempty"`
	Partitions    []PartitionTruncation `json:"partitions"`
	// Records, Markers and Barriers sum the partitions'.
	Records  int64 `json:"records"`
	Markers  int64 `json:"markers"`
	Barriers int64 `json:"barriers"`
	// Refused: the start would remove data and AllowTruncate was not set
	// (a dry run reports it too).
	Refused bool `json:"refused,omitempty"`
	// Match is how the start's topic patterns were resolved, when it
	// had some.
	Match *TopicMatch `json:"match,omitempty"`
}

// TruncateRefusedError is start's refusal, with its report.
type TruncateRefusedError struct{ Report StartReport }

func (e *TruncateRefusedError) Error() string {
	var parts []string
	for _, p := range e.Report.Partitions {
		if p.losesData() {
			parts = append(parts, fmt.Sprintf("%s-%d: %d records, %d markers (offsets %d..%d)",
				p.Topic, p.Partition, p.Records, p.Markers, p.TruncateTo, p.LocalLogEnd-1))
		}
	}
	return fmt.Sprintf("mirror: starting %s would remove local data past where it diverges from the source: %s; "+
		"nothing was changed: run with --allow-truncate (\"allow_truncate\": true) to cut it, --dry-run to see the report",
		e.Report.Mirror, strings.Join(parts, "; "))
}

func (e *TruncateRefusedError) Is(target error) bool { return target == ErrRefused }

// topicStart is one topic of a start, worked out before anything changes.
type topicStart struct {
	topic     string
	info      topicInfo
	configs   map[string]string
	approvals map[int32]*truncateApproval
}

// StartWith begins mirroring topics: each is created locally with the
// source's partition count, configs and topic id, and every partition goes
// to PREPARING (aligning an existing log with the source) then MIRRORING.
// Starting a STOPPED partition again (failback) is allowed. It answers the
// report of what aligning the logs cuts; see StartOptions.
func (m *Manager) StartWith(ctx context.Context, name string, topics []string, so StartOptions) (StartReport, error) {
	rep := StartReport{Partitions: []PartitionTruncation{}, DryRun: so.DryRun, AllowTruncate: so.AllowTruncate}
	rt, err := m.runtime(name)
	if err != nil {
		return rep, err
	}
	rep.Mirror = rt.spec.Name
	src, err := m.source(rt)
	if err != nil {
		return rep, err
	}
	if len(topics) == 0 {
		// The topic filters (discover.go): never a topic that holds
		// local data the mirror does not know, so nothing to report.
		if so.DryRun {
			return rep, fmt.Errorf("%w: --dry-run needs the topics named", ErrBadRequest)
		}
		return rep, m.startAuto(ctx, rt, src)
	}
	plans := make([]*topicStart, 0, len(topics))
	for _, topic := range topics {
		ts, err := m.planTopic(ctx, rt, src, topic, &rep)
		if err != nil {
			return rep, err
		}
		plans = append(plans, ts)
	}
	for _, p := range rep.Partitions {
		rep.Records += p.Records
		rep.Markers += p.Markers
		rep.Barriers += p.Barriers
		rep.Refused = rep.Refused || (p.losesData() && !so.AllowTruncate && !m.knobs.hooks.SkipTruncateGuard())
	}
	if so.DryRun {
		return rep, nil
	}
	if rep.Refused {
		return rep, &TruncateRefusedError{Report: rep}
	}
	for _, ts := range plans {
		if !so.AllowTruncate {
			ts.approvals = nil // barriers alone need no permission
		}
		if err := m.startPlanned(rt, ts); err != nil {
			return rep, err
		}
	}
	m.syncACLs(ctx, rt, src) // the source's ACLs on these topics (aclsync.go), then on every refresh
	return rep, nil
}

// Start is StartWith without options: it refuses to cut local data.
func (m *Manager) Start(ctx context.Context, name string, topics []string) error {
	_, err := m.StartWith(ctx, name, topics, StartOptions{})
	return err
}

// planTopic asks the source about a topic and works out, changing
// nothing, what starting it does: identity, loop and ownership checks,
// then the divergence truncation of each partition the start selects.
func (m *Manager) planTopic(ctx context.Context, rt *liveMirror, src *source, topic string, rep *StartReport) (*topicStart, error) {
	info, err := src.describeTopic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if err := m.checkIdentity(rt, topic, info); err != nil {
		m.failIdentity(rt, topic, err)
		return nil, err
	}
	if err := m.checkLoop(ctx, rt, src, topic); err != nil {
		return nil, err
	}
	configs := m.sourceConfigsFor(ctx, rt, src, topic)
	if owner := m.ownerOf(topic); owner != "" && owner != rt.spec.Name {
		return nil, fmt.Errorf("%w: topic %s is mirrored by %s", ErrActive, topic, owner)
	}
	ts := &topicStart{topic: topic, info: info, configs: configs, approvals: map[int32]*truncateApproval{}}
	parts := m.local.Partitions(topic)
	for idx := int32(0); idx < int32(len(info.Partitions)) && int(idx) < len(parts); idx++ {
		from := m.recordedState(rt, tp{topic, idx})
		if _, err := transition(from, EvStart); err != nil {
			continue // already mirroring
		}
		k, p := tp{topic, idx}, parts[idx]
		d, err := m.divergenceOf(ctx, src, topic, idx, p)
		if err != nil {
			return nil, fmt.Errorf("mirror: where %s-%d diverges from the source: %w", topic, idx, err)
		}
		if d.Cut >= d.LogEnd {
			continue
		}
		tr, err := truncationOf(k, p, d.Cut)
		if err != nil {
			return nil, err
		}
		tr.State = from
		rep.Partitions = append(rep.Partitions, tr)
		ts.approvals[idx] = &truncateApproval{TruncateTo: tr.TruncateTo, LocalLogEnd: tr.LocalLogEnd}
	}
	return ts, nil
}

// recordedState is a partition's mirror state (NoState when not recorded).
func (m *Manager) recordedState(rt *liveMirror, k tp) State {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if ts := rt.spec.Topics[k.topic]; ts != nil {
		if rec := ts.Partitions[k.partition]; rec != nil {
			return rec.State
		}
	}
	return NoState
}

// startTopic starts a topic without a report (the metadata loop, for
// partitions added at the source): no local data may be cut.
func (m *Manager) startTopic(ctx context.Context, rt *liveMirror, src *source, topic string) error {
	info, err := src.describeTopic(ctx, topic)
	if err != nil {
		return err
	}
	if err := m.checkIdentity(rt, topic, info); err != nil {
		m.failIdentity(rt, topic, err)
		return err
	}
	if m.recordedState(rt, tp{topic, 0}) == NoState { // a topic new to the mirror (filters)
		if err := m.checkLoop(ctx, rt, src, topic); err != nil {
			return err
		}
	}
	configs := m.sourceConfigsFor(ctx, rt, src, topic)
	if owner := m.ownerOf(topic); owner != "" && owner != rt.spec.Name {
		return fmt.Errorf("%w: topic %s is mirrored by %s", ErrActive, topic, owner)
	}
	return m.startPlanned(rt, &topicStart{topic: topic, info: info, configs: configs})
}

// sourceConfigsFor is what a topic is created with: the source's overrides
// minus mirror.topic.properties.exclude (nil when the source does not say).
func (m *Manager) sourceConfigsFor(ctx context.Context, rt *liveMirror, src *source, topic string) map[string]string {
	configs, err := src.topicConfigs(ctx, topic)
	if err != nil {
		m.logger.Warn("source topic configs unavailable; creating with defaults", zap.String("topic", topic), zap.Error(err))
		return nil
	}
	return wantedConfigs(configs, rt.settings())
}

// startPlanned creates the local topic and moves its selected partitions
// to PREPARING, with the start's permission to truncate (approvals, when
// --allow-truncate was given) recorded, and starts their fetchers.
func (m *Manager) startPlanned(rt *liveMirror, plan *topicStart) error {
	topic, info := plan.topic, plan.info
	// The topic is the mirror's before it exists locally (Pending): a
	// crash after the local create and before the partitions are
	// recorded leaves a topic the refresh resumes, never one that auto-
	// creation would take for a local topic.
	rt.mu.Lock()
	if m.goneLocked(rt) {
		rt.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotFound, rt.spec.Name)
	}
	if rt.spec.Topics[topic] == nil && !m.knobs.hooks.SkipPendingTopics() {
		rt.spec.Topics[topic] = &topicSpec{Partitions: map[int32]*partitionRecord{}, Pending: true}
		if err := m.saveLocked(rt); err != nil {
			delete(rt.spec.Topics, topic)
			rt.mu.Unlock()
			return err
		}
	}
	rt.mu.Unlock()
	parts, err := m.local.EnsureTopic(topic, int32(len(info.Partitions)), plan.configs, info.ID)
	if err != nil {
		return fmt.Errorf("mirror: local topic %s: %w", topic, err)
	}
	if err := m.knobs.hooks.AfterLocalTopicCreate(topic); err != nil {
		return err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if m.goneLocked(rt) { // deleted while the topic was being created
		return fmt.Errorf("%w: %s", ErrNotFound, rt.spec.Name)
	}
	ts := rt.spec.Topics[topic]
	if ts == nil {
		ts = &topicSpec{Partitions: map[int32]*partitionRecord{}}
		rt.spec.Topics[topic] = ts
	}
	if ts.Pending {
		// Created with these: they are the sync's (a topic that existed
		// locally is synced from the next refresh on).
		ts.Pending, ts.SyncedConfigs = false, plan.configs
	}
	if ts.TopicID == "" || m.knobs.hooks.SkipTopicIDCheck() {
		ts.TopicID = topicIDString(info.ID)
	}
	// The core's start for each partition: read-only first (a
	// restriction), then persisted, then its fetcher. A failed save puts
	// the records back and the modes as they derive from them.
	var started []int32
	var ks []tp
	for idx := int32(0); idx < int32(len(info.Partitions)) && int(idx) < len(parts); idx++ {
		ks = append(ks, tp{topic, idx})
	}
	snap := snapshotLocked(rt, ks)
	added := map[int32]bool{}
	for idx := int32(0); idx < int32(len(info.Partitions)) && int(idx) < len(parts); idx++ {
		rec := partitionRecord{State: NoState, LastMirroredOffset: -1, BarrierOffset: -1}
		if r := ts.Partitions[idx]; r != nil {
			rec = *r
		}
		next, _, err := step(rec, coreEvent{Kind: EvStart, Approval: plan.approvals[idx]})
		if err != nil {
			continue // already mirroring
		}
		if ts.Partitions[idx] == nil {
			added[idx] = true
			ts.Partitions[idx] = &partitionRecord{}
		}
		*ts.Partitions[idx] = next
		setMode(parts[idx], next.State, rt.spec.Name)
		started = append(started, idx)
	}
	if err := m.saveOrRestoreLocked(rt, snap); err != nil {
		for idx := range added {
			delete(ts.Partitions, idx)
		}
		for _, idx := range started {
			state := NoState
			if r := ts.Partitions[idx]; r != nil {
				state = r.State
			}
			setMode(parts[idx], state, rt.spec.Name)
		}
		return err
	}
	for _, idx := range started {
		if t := rt.retries[tp{topic, idx}]; t != nil { // disarm-retry
			t.Stop()
			delete(rt.retries, tp{topic, idx})
		}
		m.startFetcherLocked(rt, topic, idx, parts[idx], false)
	}
	m.logger.Info("mirroring topic", zap.String("mirror", rt.spec.Name), zap.String("topic", topic),
		zap.Int("partitions", len(started)), zap.String("source_cluster_id", rt.spec.SourceClusterID))
	return nil
}
