package broker

// Names Kafka reserves for its internal topics are never ordinary topics
// here, so a client cannot create one and later collide with Kafka's use.
//
// Kafka's Topic.INTERNAL_TOPICS (__consumer_offsets, __transaction_state,
// and Kafka 4's __share_group_state) are created by Kafka's own
// coordinators, flagged is_internal in Metadata; __cluster_metadata is the
// KRaft log, whose creation Kafka's controller refuses; __mirror_state is
// minibroker's. The broker itself creates __consumer_offsets,
// __transaction_state, __share_group_state and __mirror_state at
// start-up (internal_topics.go);
// no client creates any of these:
//
//   - Metadata names one that does not exist UNKNOWN_TOPIC_OR_PARTITION
//     with no partitions, is_internal set for Kafka's internal ones, as
//     Kafka's first answer for an internal topic not yet created; they are
//     never auto-created (from Metadata or Produce).
//   - CreateTopics refuses them with INVALID_REQUEST "Creation of internal
//     topic <name> is prohibited.", Kafka's answer for __cluster_metadata
//     (ControllerApis), and answers TOPIC_ALREADY_EXISTS for
//     the internal topics the broker made, which exist, as Kafka's
//     controller does once its coordinators made them.
//
// A topic of one of the other names already in topics.json (made by an
// older minibroker, which auto-created them as plain topics) is still
// served.

// reservedTopics maps each reserved name to its is_internal flag in Kafka's
// Metadata answer.
var reservedTopics = map[string]bool{
	"__consumer_offsets":  true,
	"__transaction_state": true,
	"__share_group_state": true,
	"__cluster_metadata":  false, // Kafka's Topic.isInternal does not list it
	"__mirror_state":      true,
}

// reservedTopic reports whether name is reserved, and whether Kafka's
// Metadata flags it internal.
func reservedTopic(name string) (reserved, internal bool) {
	internal, reserved = reservedTopics[name]
	return reserved, internal
}

// reservedTopicError refuses a reserved name; it is INVALID_REQUEST with
// Kafka's message.
type reservedTopicError struct{ name string }

func (e reservedTopicError) Error() string {
	return "Creation of internal topic " + e.name + " is prohibited."
}

func (e reservedTopicError) Unwrap() error { return errInvalidRequest }
