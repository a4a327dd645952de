package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Source identity. A mirror records its source's cluster id (at create
// when the source is checked, else at the first Metadata answer) and each
// topic's id (at start). A source that later answers with another cluster
// id is another cluster (an address reused, a DNS name moved): every
// partition of the mirror goes FAILED. A source topic whose id changed was
// deleted and recreated under the same name: its records have nothing to
// do with the mirrored log, so that topic goes FAILED before anything of
// the new topic is appended or any local data is cut for it. Neither is
// retried: the source will not become the old one again.

// identityError is a source that is not the one the mirror copies.
type identityError struct {
	msg string
	// wholeMirror: the cluster id differs, so every partition fails, not
	// only the topic's.
	wholeMirror bool
}

func (e *identityError) Error() string        { return e.msg }
func (e *identityError) Is(target error) bool { return target == ErrRefused }

// isIdentityError reports whether err says the source is not the mirror's.
func isIdentityError(err error) bool {
	var ie *identityError
	return errors.As(err, &ie)
}

// topicIDString is how the state records a topic id: lower-case hex,
// empty for the zero id (a source without topic ids).
func topicIDString(id [16]byte) string {
	if id == ([16]byte{}) {
		return ""
	}
	return fmt.Sprintf("%x", id[:])
}

// checkIdentity compares what the source said of a topic (Metadata) with
// what the mirror recorded. It records the cluster id when none is known
// yet (a mirror created with --no-check, or declared in the config file).
// topic may be "" to check the cluster id only.
func (m *Manager) checkIdentity(rt *liveMirror, topic string, info topicInfo) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return m.checkIdentityLocked(rt, topic, info)
}

func (m *Manager) checkIdentityLocked(rt *liveMirror, topic string, info topicInfo) error {
	spec := rt.spec
	if info.ClusterID != "" && !m.knobs.hooks.SkipIdentityCheck() {
		switch spec.SourceClusterID {
		case "":
			spec.SourceClusterID = info.ClusterID
			if err := m.saveLocked(rt); err != nil {
				spec.SourceClusterID = ""
				return err
			}
			m.logger.Info("recorded the source's cluster id", zap.String("mirror", spec.Name),
				zap.String("source_cluster_id", info.ClusterID))
		case info.ClusterID:
		default:
			return &identityError{wholeMirror: true, msg: fmt.Sprintf(
				"source %s answers with cluster id %s, but mirror %s copies cluster %s: another cluster answers at that address; not retried (delete the mirror and create it again to mirror the new cluster)",
				strings.Join(spec.Source, ","), info.ClusterID, spec.Name, spec.SourceClusterID)}
		}
	}
	if topic == "" || m.knobs.hooks.SkipTopicIDCheck() {
		return nil
	}
	ts := spec.Topics[topic]
	got := topicIDString(info.ID)
	if ts == nil || ts.TopicID == "" || got == "" || ts.TopicID == got {
		return nil
	}
	return &identityError{msg: fmt.Sprintf(
		"source topic %s has topic id %s, but the mirror copies topic id %s: the topic was deleted and recreated at the source; its records are not appended to the old topic's log and no local data is cut for it; not retried",
		topic, got, ts.TopicID)}
}

// failIdentity fails what an identity error covers: the topic's
// partitions, or every partition of the mirror when the cluster id
// differs, and answers the error of persisting it (nothing changes then).
// Their fetchers are told to stop, without waiting (the caller may be one
// of them), and kept in rt.closing, which STOPPING and shutdownRuntime
// wait for (before, each was closed by a goroutine nothing waited for:
// Manager.Close could return with them running).
func (m *Manager) failIdentity(rt *liveMirror, topic string, err error) error {
	var ie *identityError
	if !errors.As(err, &ie) {
		return nil
	}
	rt.mu.Lock()
	var ks []tp
	for t, ts := range rt.spec.Topics {
		if !ie.wholeMirror && t != topic {
			continue
		}
		for idx := range ts.Partitions {
			ks = append(ks, tp{t, idx})
		}
	}
	snap := snapshotLocked(rt, ks)
	var failed []tp
	for _, k := range ks {
		rec := rt.spec.Topics[k.topic].Partitions[k.partition]
		next, _, terr := step(*rec, coreEvent{Kind: EvFail, Fail: failIdentity, Reason: err.Error()})
		if terr != nil {
			continue // STOPPING goes on; STOPPED and FAILED stay
		}
		*rec = next
		failed = append(failed, k)
	}
	if serr := m.saveOrRestoreLocked(rt, snap); serr != nil {
		rt.mu.Unlock()
		m.logger.Error("persisting FAILED", zap.String("mirror", rt.spec.Name), zap.Error(serr))
		return serr
	}
	for _, k := range failed {
		if f := rt.fetchers[k]; f != nil {
			f.stop()
			rt.closing = append(rt.closing, f)
			delete(rt.fetchers, k)
		}
	}
	rt.mu.Unlock()
	m.logger.Error("mirror source identity changed; partitions FAILED", zap.String("mirror", rt.spec.Name),
		zap.String("topic", topic), zap.Int("partitions", len(failed)), zap.Error(err))
	return nil
}

// verifyTopicIDs asks the source for the ids of topics that a fetch read
// by name (Fetch before v13 carries no topic id): batches are appended
// only when the topic still has the id the mirror copies, checked after
// the fetch answered, so they were read from that topic. It returns the
// identity error of each topic whose id changed.
func (s *source) verifyTopicIDs(ctx context.Context, m *Manager, rt *liveMirror, topics []string) (map[string]error, error) {
	infos, err := s.describeTopics(ctx, topics)
	if err != nil {
		return nil, err
	}
	out := map[string]error{}
	for _, t := range topics {
		info, ok := infos[t]
		if !ok {
			continue // the fetch's own answer reports a missing topic
		}
		if err := m.checkIdentity(rt, t, info); err != nil {
			out[t] = err
		}
	}
	return out, nil
}

// describeTopics asks the source's Metadata for several topics at once.
func (s *source) describeTopics(ctx context.Context, topics []string) (map[string]topicInfo, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return nil, fmt.Errorf("source metadata: %w", err)
	}
	out := map[string]topicInfo{}
	for _, t := range resp.Topics {
		if t.Topic == nil || t.ErrorCode != 0 {
			continue
		}
		info := topicInfo{ID: t.TopicID, Partitions: map[int32]int32{}, Epochs: map[int32]int32{}}
		if resp.ClusterID != nil {
			info.ClusterID = *resp.ClusterID
		}
		for _, p := range t.Partitions {
			info.Partitions[p.Partition] = p.Leader
			info.Epochs[p.Partition] = p.LeaderEpoch
		}
		out[*t.Topic] = info
	}
	return out, nil
}
