package mirror

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Mirror loops: cycles between clusters (not the fetch loop of
// brokerloop.go). A cluster B that mirrors topic T from A, and A that
// mirrors T from B at the same time, would each copy the other's copy:
// neither is the source of truth, and each PREPARING could cut what the
// other just mirrored. `mirror start` refuses it.
//
// To tell, a minibroker describes a topic it mirrors with two read-only
// topic configs (DescribeConfigs, source DYNAMIC_TOPIC_CONFIG): the
// mirror's name as `mirror.name` (KIP-1279's topic config) and the source
// cluster's id as `mirror.source.cluster.id` (a minibroker extension; the
// KIP keeps the mirror's definition, with its source, in the destination's
// metadata instead). Before a topic is mirrored, its source is asked for
// both; a source that mirrors it from this cluster is a loop. A source that
// describes neither (Apache Kafka, kfake, or a topic it does not mirror)
// is no loop. Only the direct loop (two clusters) is seen: A → B → C → A
// is not.

// Topic configs a minibroker shows on a topic it mirrors.
const (
	ConfigMirrorName            = "mirror.name"
	ConfigMirrorSourceClusterID = "mirror.source.cluster.id"
)

// loopError is a start refused because the source mirrors the topic from
// this cluster.
type loopError struct{ msg string }

func (e *loopError) Error() string        { return e.msg }
func (e *loopError) Is(target error) bool { return target == ErrRefused }

// TopicMirror names the mirror that copies topic into this broker (one of
// its partitions PREPARING, MIRRORING, PAUSED, STOPPING or FAILED: still
// read-only) and its source cluster's id ("" when not known yet).
func (m *Manager) TopicMirror(topic string) (name, sourceClusterID string, ok bool) {
	for _, rt := range m.live() {
		if name, id, ok := rt.mirrorsTopic(topic); ok {
			return name, id, true
		}
	}
	return "", "", false
}

// mirrorsTopic is TopicMirror for one mirror; it takes rt.mu.
func (rt *liveMirror) mirrorsTopic(topic string) (name, sourceClusterID string, ok bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	ts, found := rt.spec.Topics[topic]
	if !found {
		return "", "", false
	}
	for _, rec := range ts.Partitions {
		if rec.State.active() || rec.State == Failed {
			return rt.spec.Name, rt.spec.SourceClusterID, true
		}
	}
	return "", "", false
}

// checkLoop refuses to mirror a topic that the source mirrors from this
// cluster.
func (m *Manager) checkLoop(ctx context.Context, rt *liveMirror, src *source, topic string) error {
	if m.knobs.hooks.SkipLoopCheck() {
		return nil
	}
	name, cluster, err := src.topicMirror(ctx, topic)
	if err != nil {
		// A source that cannot describe the topic's configs cannot say;
		// the start goes on (it copies no configs either).
		m.logger.Debug("source topic mirror state unknown", zap.String("topic", topic), zap.Error(err))
		return nil
	}
	local := m.local.ClusterID()
	if name == "" || cluster == "" || cluster != local {
		return nil
	}
	rt.mu.Lock()
	srcCluster := rt.spec.SourceClusterID
	rt.mu.Unlock()
	return &loopError{msg: fmt.Sprintf(
		"mirror: refusing a mirror loop: mirror %s would copy topic %s from cluster %s, whose mirror %s copies it from this cluster (%s); stop (fail over) mirror %s on cluster %s first",
		rt.spec.Name, topic, srcCluster, name, local, name, srcCluster)}
}

// topicMirror asks the source how it mirrors topic: the mirror's name and
// its source cluster id, "" when it does not.
func (s *source) topicMirror(ctx context.Context, topic string) (name, sourceClusterID string, err error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType = kmsg.ConfigResourceTypeTopic
	rr.ResourceName = topic
	rr.ConfigNames = []string{ConfigMirrorName, ConfigMirrorSourceClusterID}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return "", "", err
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return "", "", err
		}
		for _, c := range r.Configs {
			if c.Value == nil {
				continue
			}
			switch c.Name {
			case ConfigMirrorName:
				name = *c.Value
			case ConfigMirrorSourceClusterID:
				sourceClusterID = *c.Value
			}
		}
	}
	return name, sourceClusterID, nil
}
