package broker

// The coordinators' internal topics, __consumer_offsets,
// __transaction_state and __share_group_state (the share coordinator's,
// share_state_topic.go), and the mirrors' __mirror_state
// (internal/mirror/statetopic.go).
//
// Both are created when the broker starts, if topics.json does not list
// them yet, with Kafka's partition counts (offsets.topic.num.partitions,
// transaction.state.log.num.partitions, 50 each by default) and the
// configs Kafka's coordinators create them with
// (GroupCoordinatorService.groupMetadataTopicConfigs,
// TransactionStateManager.transactionTopicConfigs): cleanup.policy=compact,
// their segment.bytes, compression.type producer / uncompressed, and for
// the transaction topic min.insync.replicas and
// unclean.leader.election.enable=false (accepted and ignored on one node).
// __share_group_state has share.coordinator.state.topic.num.partitions
// (50) and Kafka's ShareCoordinatorService.shareGroupStateTopicConfigs:
// cleanup.policy=delete (KIP-932: compaction would keep only the last
// ShareSnapshot and the last ShareUpdate of a share partition, and an
// update is a delta over the ones before it), and its segment.bytes.
// Deviation: retention.ms and retention.bytes -1, as the share
// coordinator prunes the topic itself (below each partition's oldest
// snapshot still needed) and time retention would drop the only
// snapshot of a share partition that has been idle.
// __mirror_state has one partition (a mirror state save is one batch,
// atomic only within a partition), cleanup.policy=compact and the
// offsets topic's segment.bytes. Deviation: Kafka creates each on its
// coordinator's first request
// (FindCoordinator); minibroker creates them at start-up, so they are
// listed from the first Metadata on. An existing topic keeps its
// partition count, as Kafka's coordinators take the count of the topic
// that exists: a topic of these names left by an older minibroker (which
// auto-created them as plain topics, e.g. on Burrow's Metadata) is
// adopted, and given the compaction configs when it has no cleanup.policy.
//
// Clients see them as Kafka's internal topics:
//   - Metadata answers is_internal true and lists them among all topics
//     (client libraries leave internal topics out of their listings unless
//     asked, as Kafka's Admin.listTopics does);
//   - Fetch reads them under the usual ACLs (DESCRIBE and READ on the
//     topic), as Kafka's consumers of __consumer_offsets do;
//   - Produce answers INVALID_TOPIC_EXCEPTION "Cannot append to internal
//     topic …", and DeleteRecords "Cannot delete records of internal
//     topic …", as Kafka's ReplicaManager. Deviation: Kafka lets the
//     client id "__admin_client" append; minibroker lets no client write
//     its coordinators' state.
//   - DeleteTopics answers INVALID_TOPIC_EXCEPTION and CreatePartitions
//     INVALID_PARTITIONS. Deviation: Kafka's controller deletes them, and
//     grows them, for a principal allowed to (its TopicCommand refuses
//     the deletion on the client side); minibroker's coordinators keep
//     their state there and place each group and transactional id by the
//     partition count, so it refuses both.
//   - A mirror never writes them: the default topics.exclude (__.*)
//     leaves them out, and a mirror configured to include them is refused
//     the local topic (mirrorLocal.EnsureTopic).

import (
	"fmt"
	"strconv"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/mirror"
)

// The internal topics' names (Kafka's Topic.GROUP_METADATA_TOPIC_NAME and
// Topic.TRANSACTION_STATE_TOPIC_NAME).
const (
	offsetsTopic     = "__consumer_offsets"
	txnTopic         = "__transaction_state"
	mirrorStateTopic = mirror.StateTopicName
	shareStateTopic  = "__share_group_state"
)

// coordinatorTopic reports whether name is one of the internal topics a
// coordinator (or the mirrors) of this broker writes.
func coordinatorTopic(name string) bool {
	return name == offsetsTopic || name == txnTopic || name == mirrorStateTopic || name == shareStateTopic
}

// internalTopicError refuses a client's change to an internal topic; it
// wraps the Kafka error it answers.
type internalTopicError struct {
	msg  string
	kind error
}

func (e internalTopicError) Error() string { return e.msg }
func (e internalTopicError) Unwrap() error { return e.kind }

// errInternalAppend and errInternalDeleteRecords are Kafka's refusals
// (ReplicaManager.appendToLocalLog, deleteRecordsOnLocalLog).
func errInternalAppend(topic string) error {
	return internalTopicError{"Cannot append to internal topic " + topic, errInvalidTopic}
}

func errInternalDeleteRecords(topic string) error {
	return internalTopicError{"Cannot delete records of internal topic " + topic, errInvalidTopic}
}

func errInternalDelete(topic string) error {
	return internalTopicError{"Internal topic " + topic + " cannot be deleted: it holds its coordinator's state.", errInvalidTopic}
}

// internalTopicSpec is what one internal topic is created with.
type internalTopicSpec struct {
	name       string
	partitions int32
	configs    map[string]string
}

// internalTopicSpecs: Kafka's partition counts and topic configs for the
// topics, from the broker's settings.
func (b *Broker) internalTopicSpecs() []internalTopicSpec {
	return []internalTopicSpec{
		{offsetsTopic, b.cfg.Int32("offsets.topic.num.partitions"), map[string]string{
			"cleanup.policy":   "compact",
			"segment.bytes":    strconv.FormatInt(b.cfg.Int64("offsets.topic.segment.bytes"), 10),
			"compression.type": "producer",
		}},
		{txnTopic, b.cfg.Int32("transaction.state.log.num.partitions"), map[string]string{
			"cleanup.policy":                 "compact",
			"segment.bytes":                  strconv.FormatInt(b.cfg.Int64("transaction.state.log.segment.bytes"), 10),
			"compression.type":               "uncompressed",
			"min.insync.replicas":            strconv.FormatInt(b.cfg.Int64("transaction.state.log.min.isr"), 10),
			"unclean.leader.election.enable": "false",
		}},
		{shareStateTopic, b.cfg.Int32("share.coordinator.state.topic.num.partitions"), map[string]string{
			"cleanup.policy":   "delete",
			"segment.bytes":    strconv.FormatInt(b.cfg.Int64("share.coordinator.state.topic.segment.bytes"), 10),
			"compression.type": "producer",
			"retention.ms":     "-1",
			"retention.bytes":  "-1",
		}},
		{mirrorStateTopic, 1, map[string]string{
			"cleanup.policy":   "compact",
			"segment.bytes":    strconv.FormatInt(b.cfg.Int64("offsets.topic.segment.bytes"), 10),
			"compression.type": "uncompressed",
		}},
	}
}

// ensureInternalTopics creates the internal topics topics.json does not
// list yet, and gives an adopted one (see above) its configs; called at
// start-up after loadTopics, before the coordinators open. A crash in the
// middle leaves at most orphan partition directories (removed at the next
// start-up) or a topic created and not yet configured, which the next
// start configures.
func (b *Broker) ensureInternalTopics() error {
	for _, spec := range b.internalTopicSpecs() {
		t, ok := b.Topic(spec.name)
		if !ok {
			if _, err := b.createTopic(spec.name, spec.partitions, spec.configs, [16]byte{}, false, false); err != nil {
				return fmt.Errorf("creating internal topic %s: %w", spec.name, err)
			}
			continue
		}
		if _, set := b.configsOf(t)["cleanup.policy"]; set {
			continue
		}
		b.logger.Info("adopting a topic an older minibroker made as the internal topic",
			zap.String("topic", spec.name), zap.Int("partitions", len(b.partitions(t))))
		err := b.updateTopicConfigs(spec.name, func(c map[string]string) (map[string]string, error) {
			if c == nil {
				c = map[string]string{}
			}
			for k, v := range spec.configs {
				if _, set := c[k]; !set {
					c[k] = v
				}
			}
			return c, nil
		}, false)
		if err != nil {
			return fmt.Errorf("configuring internal topic %s: %w", spec.name, err)
		}
	}
	return nil
}
