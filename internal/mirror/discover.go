package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/config"
)

// What the refresh does besides growing topics (refresh.go), every
// mirror.metadata.refresh.interval.ms:
//
//   - auto-creation: when `mirror start` was given no topics (the spec's
//     AutoTopics), every source topic that mirror.topics.include and
//     mirror.topics.exclude select and that the mirror does not know yet
//     is started, as `mirror start --topics` would. A topic that exists
//     locally and that the mirror does not know is never taken over: a
//     start aligns a local log with the source's by truncating it, which
//     only an operator naming the topic may ask for (skipped, shown by
//     describe);
//   - deletion: a mirrored topic the source answers
//     UNKNOWN_TOPIC_OR_PARTITION for, on two refreshes in a row, from the
//     same cluster (its cluster id), goes FAILED for the operator to fail
//     over (KIP-1279), or with mirror.topic.deleted.policy=stop is stopped
//     as `mirror stop` would (STOPPING, the barrier, writable); describe
//     and the log say which;
//   - config sync: each mirrored topic's overrides at the source, minus
//     mirror.topic.properties.exclude, are applied to the local topic; an
//     override the sync set earlier and the source no longer has is
//     removed. Overrides made locally to other names are left alone.

// missingRefreshes is how many refreshes in a row must find a mirrored
// topic gone at the source before its mirror stops.
const missingRefreshes = 2

// topicAnswer is the source's answer for one topic of a Metadata request.
type topicAnswer struct {
	info topicInfo
	err  error // the topic's error code, nil when none
}

// metadataOf asks the source for the named topics, or for all when none
// are named; it answers each topic's info or error, and the source's
// cluster id.
func (s *source) metadataOf(ctx context.Context, topics []string) (map[string]topicAnswer, string, error) {
	req := kmsg.NewPtrMetadataRequest()
	if len(topics) > 0 {
		for _, t := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
	} else {
		req.Topics = nil // all topics
	}
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return nil, "", fmt.Errorf("source metadata: %w", err)
	}
	clusterID := ""
	if resp.ClusterID != nil {
		clusterID = *resp.ClusterID
	}
	out := map[string]topicAnswer{}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		a := topicAnswer{info: topicInfo{ID: t.TopicID, Partitions: map[int32]int32{}, Epochs: map[int32]int32{}, ClusterID: clusterID},
			err: kerr.ErrorForCode(t.ErrorCode)}
		for _, p := range t.Partitions {
			a.info.Partitions[p.Partition] = p.Leader
			a.info.Epochs[p.Partition] = p.LeaderEpoch
		}
		out[*t.Topic] = a
	}
	return out, clusterID, nil
}

// topicMirrored reports whether a mirror's topic has a partition fed by
// a fetcher (or about to be); m.mu held.
func (ts *topicSpec) mirrored() bool {
	for _, rec := range ts.Partitions {
		if rec.State.active() && rec.State != Stopping {
			return true
		}
	}
	return false
}

// refreshTopics is the refresh's work on the mirror's topics: growth,
// deletion at the source and config sync for the mirrored ones, then
// auto-creation.
func (m *Manager) refreshTopics(ctx context.Context, rt *liveMirror, src *source) {
	s := rt.settings()
	rt.mu.Lock()
	var mirrored, pending []string
	for topic, ts := range rt.spec.Topics {
		switch {
		case ts.Pending:
			pending = append(pending, topic)
		case ts.mirrored():
			mirrored = append(mirrored, topic)
		}
	}
	auto := rt.spec.AutoTopics
	sourceCluster := rt.spec.SourceClusterID
	rt.mu.Unlock()
	sort.Strings(mirrored)
	sort.Strings(pending)

	// A topic whose start a crash interrupted (created locally or not
	// yet) is started again: it is this mirror's.
	for _, topic := range pending {
		if err := m.startTopic(ctx, rt, src, topic); err != nil {
			m.logger.Warn("resuming the start of a mirrored topic", zap.String("mirror", rt.spec.Name), zap.String("topic", topic), zap.Error(err))
		}
	}
	if len(mirrored) > 0 {
		answers, clusterID, err := src.metadataOf(ctx, mirrored)
		if err != nil {
			m.logger.Debug("refresh: source metadata", zap.String("mirror", rt.spec.Name), zap.Error(err))
			return
		}
		for _, topic := range mirrored {
			a, ok := answers[topic]
			switch {
			case ok && errors.Is(a.err, kerr.UnknownTopicOrPartition):
				m.sourceTopicMissing(rt, topic, clusterID, sourceCluster)
			case !ok || a.err != nil:
				continue
			default:
				m.sourceTopicSeen(rt, topic)
				if err := m.checkIdentity(rt, topic, a.info); err != nil {
					m.failIdentity(rt, topic, err) // another cluster, or the topic recreated
					continue
				}
				m.noteSourceEpochs(rt, topic, a.info) // paused partitions too (epoch.go)
				m.growTopic(ctx, rt, src, topic, len(a.info.Partitions))
				if err := m.syncTopicConfigs(ctx, rt, src, topic, s); err != nil {
					m.logger.Warn("topic config sync", zap.String("mirror", rt.spec.Name), zap.String("topic", topic), zap.Error(err))
				}
			}
		}
	}
	if auto {
		if err := m.discoverTopics(ctx, rt, src, s); err != nil {
			m.logger.Debug("refresh: topic discovery", zap.String("mirror", rt.spec.Name), zap.Error(err))
		}
	}
}

// growTopic starts the partitions the source added to a mirrored topic.
func (m *Manager) growTopic(ctx context.Context, rt *liveMirror, src *source, topic string, sourceParts int) {
	rt.mu.Lock()
	known := len(rt.spec.Topics[topic].Partitions)
	rt.mu.Unlock()
	if sourceParts <= known {
		return
	}
	m.logger.Info("source topic gained partitions", zap.String("mirror", rt.spec.Name), zap.String("topic", topic),
		zap.Int("from", known), zap.Int("to", sourceParts))
	if err := m.startTopic(ctx, rt, src, topic); err != nil {
		m.logger.Warn("mirroring new partitions failed", zap.String("topic", topic), zap.Error(err))
	}
}

func (m *Manager) sourceTopicSeen(rt *liveMirror, topic string) {
	rt.mu.Lock()
	delete(rt.missing, topic)
	rt.mu.Unlock()
}

// sourceTopicMissing counts a refresh that found topic gone at the source
// and, at missingRefreshes in a row, does what mirror.topic.deleted.policy
// says: fail (the default, KIP-1279's) makes the topic's partitions
// FAILED, read-only, never retried, for the operator to fail over (`mirror
// stop`) or delete; stop fails it over at once, as `mirror stop` would.
// Only an answer from the cluster the mirror was created on counts: a
// bootstrap address that now reaches another cluster must not change
// anything.
func (m *Manager) sourceTopicMissing(rt *liveMirror, topic, clusterID, want string) {
	if want != "" && clusterID != want {
		return
	}
	rt.mu.Lock()
	if rt.missing == nil {
		rt.missing = map[string]int{}
	}
	rt.missing[topic]++
	n := rt.missing[topic]
	rt.mu.Unlock()
	if n < missingRefreshes {
		return
	}
	now := time.Now().UnixMilli()
	policy := rt.settings().TopicDeletedPolicy
	if policy == TopicDeletedStop {
		if err := m.setTopic(rt, topic, func(ts *topicSpec) { ts.SourceDeletedAtMs = now }); err != nil {
			m.logger.Error("source topic deleted: not persisted", zap.String("mirror", rt.spec.Name), zap.String("topic", topic), zap.Error(err))
			return
		}
		m.logger.Warn("source topic deleted; failing it over on its own ("+SettingTopicDeletedPolicy+"=stop: STOPPING, barrier, writable)",
			zap.String("mirror", rt.spec.Name), zap.String("topic", topic))
		if err := m.Stop(rt.spec.Name, []string{topic}); err != nil {
			m.logger.Error("stopping the mirror of a deleted source topic", zap.String("mirror", rt.spec.Name), zap.String("topic", topic), zap.Error(err))
			return
		}
	} else if err := m.failSourceDeleted(rt, topic, now); err != nil {
		m.logger.Error("source topic deleted: FAILED not persisted", zap.String("mirror", rt.spec.Name), zap.String("topic", topic), zap.Error(err))
		return
	}
	rt.mu.Lock()
	delete(rt.missing, topic)
	rt.mu.Unlock()
}

// failSourceDeleted records when the source deleted topic and makes its
// followed partitions FAILED (never retried), in one save, and stops
// their fetchers (without waiting: STOPPING and shutdown wait for them).
// The local log stays as it is, read-only.
func (m *Manager) failSourceDeleted(rt *liveMirror, topic string, now int64) error {
	reason := fmt.Sprintf("source topic deleted (found %s): mirror FAILED, read-only; `mirror stop` fails it over (%s=%s)",
		time.UnixMilli(now).UTC().Format(time.RFC3339), SettingTopicDeletedPolicy, TopicDeletedFail)
	rt.mu.Lock()
	ts := rt.spec.Topics[topic]
	if ts == nil {
		rt.mu.Unlock()
		return nil
	}
	var ks []tp
	for idx := range ts.Partitions {
		ks = append(ks, tp{topic, idx})
	}
	snap := snapshotLocked(rt, ks)
	was := ts.SourceDeletedAtMs
	ts.SourceDeletedAtMs = now
	var failed []tp
	for _, k := range ks {
		rec := ts.Partitions[k.partition]
		next, _, terr := step(*rec, coreEvent{Kind: EvFail, Fail: failIdentity, Reason: reason})
		if terr != nil {
			continue // STOPPING goes on; STOPPED and FAILED stay
		}
		*rec = next
		failed = append(failed, k)
	}
	if err := m.saveOrRestoreLocked(rt, snap); err != nil {
		ts.SourceDeletedAtMs = was
		rt.mu.Unlock()
		return err
	}
	for _, k := range failed {
		if t := rt.retries[k]; t != nil {
			t.Stop()
			delete(rt.retries, k)
		}
		if f := rt.fetchers[k]; f != nil {
			f.stop()
			rt.closing = append(rt.closing, f)
			delete(rt.fetchers, k)
		}
	}
	rt.mu.Unlock()
	m.logger.Warn("source topic deleted; its partitions are FAILED, read-only, for the operator to fail over (`mirror stop`) or delete",
		zap.String("mirror", rt.spec.Name), zap.String("topic", topic), zap.Int("partitions", len(failed)),
		zap.String(SettingTopicDeletedPolicy, TopicDeletedFail))
	return nil
}

// setTopic updates a topic's persisted spec.
func (m *Manager) setTopic(rt *liveMirror, topic string, update func(*topicSpec)) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	ts := rt.spec.Topics[topic]
	if ts == nil {
		return fmt.Errorf("%w: mirror %s has no topic %s", ErrNotFound, rt.spec.Name, topic)
	}
	update(ts)
	return m.saveLocked(rt)
}

// discoverTopics starts every source topic the settings select that the
// mirror does not know yet (see the comment at the top).
func (m *Manager) discoverTopics(ctx context.Context, rt *liveMirror, src *source, s *Settings) error {
	answers, _, err := src.metadataOf(ctx, nil)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(answers))
	for name, a := range answers {
		if a.err == nil && s.TopicSelected(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, topic := range names {
		rt.mu.Lock()
		_, known := rt.spec.Topics[topic]
		_, skipped := rt.skipped[topic]
		following := rt.spec.AutoTopics
		rt.mu.Unlock()
		if !following {
			return nil // a stop of the whole mirror came meanwhile
		}
		if known {
			continue
		}
		reason := ""
		if owner := m.ownerOf(topic); owner != "" {
			reason = "mirrored by " + owner
		} else if m.local.Partitions(topic) != nil {
			reason = "exists locally and is not mirrored: start it by name (mirror start --topics) to mirror into it"
		}
		if reason != "" && !m.knobs.hooks.TakeOverLocalTopics() {
			if !skipped {
				m.logger.Warn("source topic selected but not mirrored", zap.String("mirror", rt.spec.Name),
					zap.String("topic", topic), zap.String("reason", reason))
				rt.mu.Lock()
				if rt.skipped == nil {
					rt.skipped = map[string]string{}
				}
				rt.skipped[topic] = reason
				rt.mu.Unlock()
			}
			continue
		}
		m.logger.Info("auto-mirroring source topic", zap.String("mirror", rt.spec.Name), zap.String("topic", topic))
		if err := m.startTopic(ctx, rt, src, topic); err != nil {
			m.logger.Warn("auto-mirroring source topic failed", zap.String("mirror", rt.spec.Name), zap.String("topic", topic), zap.Error(err))
			continue
		}
		rt.mu.Lock()
		delete(rt.skipped, topic)
		rt.mu.Unlock()
	}
	return nil
}

// startAuto is `mirror start` without topics: it records that the mirror
// follows its topic filters, and starts what they select now.
func (m *Manager) startAuto(ctx context.Context, rt *liveMirror, src *source) error {
	s := rt.settings()
	if len(s.TopicsInclude) == 0 {
		return fmt.Errorf("%w: no topics named and %s selects none", ErrBadRequest, SettingTopicsInclude)
	}
	rt.mu.Lock()
	if !rt.spec.AutoTopics {
		rt.spec.AutoTopics = true
		if err := m.saveLocked(rt); err != nil {
			rt.spec.AutoTopics = false
			rt.mu.Unlock()
			return err
		}
	}
	rt.mu.Unlock()
	return m.discoverTopics(ctx, rt, src, s)
}

// wantedConfigs is what the local topic's overrides should be of the
// source's: those minibroker knows, minus the excluded ones.
func wantedConfigs(source map[string]string, s *Settings) map[string]string {
	out := map[string]string{}
	for k, v := range source {
		if s.PropertyExcluded(k) {
			continue
		}
		if _, ok := config.LookupTopic(k); !ok {
			continue // a setting of the source's own (confluent.*, …)
		}
		out[k] = v
	}
	return out
}

// syncTopicConfigs makes the local topic's overrides follow the source's
// (see the comment at the top). The names the sync set are persisted in
// the topic's SyncedConfigs, first with the new ones added (so a crash
// after the change still knows they came from the source), then as they
// are after it.
func (m *Manager) syncTopicConfigs(ctx context.Context, rt *liveMirror, src *source, topic string, s *Settings) error {
	srcConfigs, err := src.topicConfigs(ctx, topic)
	if err != nil {
		return err
	}
	want := wantedConfigs(srcConfigs, s)
	local, ok := m.local.TopicConfigs(topic)
	if !ok {
		return fmt.Errorf("mirror: local topic %s missing", topic)
	}
	rt.mu.Lock()
	ts := rt.spec.Topics[topic]
	if ts == nil {
		rt.mu.Unlock()
		return nil
	}
	synced := maps.Clone(ts.SyncedConfigs)
	rt.mu.Unlock()
	set := map[string]string{}
	for k, v := range want {
		if cur, ok := local[k]; !ok || cur != v {
			set[k] = v
		}
	}
	var remove []string
	for k := range synced {
		if _, still := want[k]; still || s.PropertyExcluded(k) {
			continue // excluded since: the local value is the destination's now
		}
		if _, has := local[k]; has {
			remove = append(remove, k)
		}
	}
	sort.Strings(remove)
	if len(set) == 0 && len(remove) == 0 {
		if !maps.Equal(synced, want) {
			return m.setTopic(rt, topic, func(ts *topicSpec) { ts.SyncedConfigs = want })
		}
		return nil
	}
	union := maps.Clone(synced)
	if union == nil {
		union = map[string]string{}
	}
	maps.Copy(union, want)
	if err := m.setTopic(rt, topic, func(ts *topicSpec) { ts.SyncedConfigs = union }); err != nil {
		return err
	}
	if err := m.knobs.hooks.BeforeConfigSync(topic); err != nil {
		return err
	}
	if err := m.local.UpdateTopicConfigs(topic, set, remove); err != nil {
		return fmt.Errorf("mirror: apply the source's configs to %s: %w", topic, err)
	}
	if err := m.setTopic(rt, topic, func(ts *topicSpec) { ts.SyncedConfigs = want }); err != nil {
		return err
	}
	m.logger.Info("topic configs synced from source", zap.String("mirror", rt.spec.Name), zap.String("topic", topic),
		zap.Any("set", set), zap.Strings("removed", remove))
	return nil
}
