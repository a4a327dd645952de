package broker

// CreateTopics, v2–v7.
//
// NumPartitions -1 takes num.partitions. ReplicationFactor must be -1 or 1
// (one node holds one replica: INVALID_REPLICATION_FACTOR otherwise); a
// manual assignment may name only this node. Topic configs are checked
// against the settings table (internal/config), with Kafka's types, ranges
// and allowed values: INVALID_CONFIG naming the key, the value and the
// rule otherwise; a config given without a value is INVALID_CONFIG too. v5+ returns the partition count and the topic's configs;
// v7 the topic ID.
//
// As Kafka's controller (ReplicationControlManager), a request asking for
// more than 10,000 partitions in all is refused whole: every topic
// POLICY_VIOLATION, "Excessively large number of partitions per request.".
// max.broker.partitions (KIP-578's name; Kafka has no such limit) refuses a
// topic that would take the broker past it, with POLICY_VIOLATION.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleCreateTopics(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	total := int64(0)
	for _, rt := range req.Topics {
		seen[rt.Topic]++
		switch {
		case len(rt.ReplicaAssignment) > 0:
			total += int64(len(rt.ReplicaAssignment))
		case rt.NumPartitions == -1:
			total += int64(b.cfg.Int32("num.partitions"))
		case rt.NumPartitions > 0:
			total += int64(rt.NumPartitions)
		}
	}
	if total > maxPartitionsPerRequest {
		msg := msgTooManyCreated
		for _, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			st.NumPartitions, st.ReplicationFactor = -1, -1
			st.ErrorCode, st.ErrorMessage = kerr.PolicyViolation.Code, &msg
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		err := b.createTopicFromRequest(rt, req.ValidateOnly, seen[rt.Topic] > 1, &st)
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (b *Broker) createTopicFromRequest(rt kmsg.CreateTopicsRequestTopic, validateOnly, duplicate bool, st *kmsg.CreateTopicsResponseTopic) error {
	if duplicate {
		return fmt.Errorf("%w: topic %q listed twice", errInvalidRequest, rt.Topic)
	}
	if rt.ReplicationFactor != -1 && rt.ReplicationFactor != 1 {
		return fmt.Errorf("%w (asked %d)", errReplication, rt.ReplicationFactor)
	}
	parts := rt.NumPartitions
	if len(rt.ReplicaAssignment) > 0 {
		if parts != -1 || rt.ReplicationFactor != -1 {
			return fmt.Errorf("%w: both an assignment and a count or factor", errInvalidRequest)
		}
		for _, a := range rt.ReplicaAssignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != b.nodeID {
				return fmt.Errorf("%w: assignment must name only broker %d", errReplication, b.nodeID)
			}
		}
		parts = int32(len(rt.ReplicaAssignment))
	}
	configs := map[string]string{}
	for _, c := range rt.Configs {
		if c.Value == nil {
			return fmt.Errorf("%w: %s has no value", errInvalidConfig, c.Name)
		}
		configs[c.Name] = *c.Value
	}
	t, err := b.CreateTopic(rt.Topic, parts, configs, [16]byte{}, validateOnly)
	if err != nil {
		return err
	}
	st.TopicID = t.ID
	st.NumPartitions = max(parts, b.cfg.Int32("num.partitions"))
	if parts > 0 {
		st.NumPartitions = parts
	}
	st.ReplicationFactor = 1
	for _, name := range sortedTopicConfigNames() {
		s, _ := config.LookupTopic(name)
		v, src := b.topicValue(t.Configs, name) // t is not shared yet, or is b's own on validate_only
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value = name, &v
		c.Source = int8(kafkaSource(src))
		c.IsSensitive = s.Sensitive()
		st.Configs = append(st.Configs, c)
	}
	return nil
}
