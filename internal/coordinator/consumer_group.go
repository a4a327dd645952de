package coordinator

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"sort"
	"time"
)

// KIP-848 consumer groups (the "consumer" group protocol of Kafka 4):
// the coordinator assigns partitions itself. A group's state is the group
// epoch (bumped by every change of membership or of the subscribed
// topics' metadata), the target assignment computed by a server-side
// assignor at the group epoch (its epoch is the assignment epoch), and
// per member its current assignment and member epoch. A member reconciles
// towards its target one heartbeat at a time, as Kafka's
// CurrentAssignmentBuilder does: a partition leaves its owner first
// (UNREVOKED_PARTITIONS until the owner's heartbeat no longer lists it) and
// is given to its new owner only once no member holds it (its partition
// epoch is gone; UNRELEASED_PARTITIONS meanwhile).
//
// Every change is a record (consumer_group_record.go), applied by apply
// live and when the group log is replayed, as Kafka replays its
// ConsumerGroup* records from __consumer_offsets. Timers (sessions,
// rebalance timeouts) are not persisted: after a restart they start again
// at load time, as the classic groups' sessions do.

// TopicID is a topic's UUID.
type TopicID = [16]byte

// TopicInfo is one topic as the group coordinator sees it.
type TopicInfo struct {
	Name       string
	ID         TopicID
	Partitions int32
}

// TopicImage is the broker's topics at one moment. Gen changes whenever a
// topic is created, deleted or grows; an image is never changed after it
// is handed over.
type TopicImage struct {
	Gen    uint64
	ByName map[string]TopicInfo
	ByID   map[TopicID]string
}

// NewTopicImage builds an image from topics.
func NewTopicImage(gen uint64, topics []TopicInfo) *TopicImage {
	im := &TopicImage{Gen: gen, ByName: make(map[string]TopicInfo, len(topics)), ByID: make(map[TopicID]string, len(topics))}
	for _, t := range topics {
		im.ByName[t.Name] = t
		im.ByID[t.ID] = t.Name
	}
	return im
}

var emptyTopicImage = NewTopicImage(0, nil)

// MemberState is a consumer group member's reconciliation state, with
// Kafka's MemberState byte values (persisted: never renumber).
type MemberState int8

const (
	MemberStable               MemberState = 0
	MemberUnrevokedPartitions  MemberState = 1
	MemberUnreleasedPartitions MemberState = 2
	MemberUnknown              MemberState = 127
)

func (s MemberState) String() string {
	switch s {
	case MemberStable:
		return "STABLE"
	case MemberUnrevokedPartitions:
		return "UNREVOKED_PARTITIONS"
	case MemberUnreleasedPartitions:
		return "UNRELEASED_PARTITIONS"
	}
	return "UNKNOWN"
}

// Member epochs with a meaning in ConsumerGroupHeartbeat.
const (
	joinEpoch        int32 = 0
	leaveEpoch       int32 = -1
	staticLeaveEpoch int32 = -2
)

// assignment maps a topic id to its partitions, sorted, without
// duplicates; a topic with no partitions is absent.
type assignment map[TopicID][]int32

func (a assignment) clone() assignment {
	out := make(assignment, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

func (a assignment) equal(b assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		if !slices.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

func (a assignment) has(t TopicID, p int32) bool {
	_, ok := slices.BinarySearch(a[t], p)
	return ok
}

func (a assignment) add(t TopicID, p int32) {
	ps := a[t]
	i, ok := slices.BinarySearch(ps, p)
	if !ok {
		a[t] = slices.Insert(ps, i, p)
	}
}

func (a assignment) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// topics are a's topic ids, sorted.
func (a assignment) topics() []TopicID {
	ids := make([]TopicID, 0, len(a))
	for t := range a {
		ids = append(ids, t)
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	return ids
}

// normalize sorts and dedups every topic's partitions, dropping empty ones.
func (a assignment) normalize() assignment {
	for t, ps := range a {
		slices.Sort(ps)
		ps = slices.Compact(ps)
		if len(ps) == 0 {
			delete(a, t)
		} else {
			a[t] = ps
		}
	}
	return a
}

// OwnedTopic is one topic's partitions a member reports it owns.
type OwnedTopic struct {
	ID         TopicID
	Partitions []int32
}

// ownedAssignment is the request's owned partitions as an assignment (nil
// when the request did not carry them).
func ownedAssignment(owned []OwnedTopic) assignment {
	if owned == nil {
		return nil
	}
	a := assignment{}
	for _, t := range owned {
		a[t.ID] = append(a[t.ID], t.Partitions...)
	}
	return a.normalize()
}

// cgMember is one member of a consumer group.
type cgMember struct {
	id string
	// ConsumerGroupMemberMetadata's fields.
	instanceID, rackID   string // "" for null (an empty string is refused)
	clientID, clientHost string
	subscribedNames      []string // sorted
	regex                string   // "" for none
	rebalanceTimeoutMs   int32
	serverAssignor       string // "" for none: the group's default
	// classic is ClassicMemberMetadata: set for a member that speaks the
	// classic protocol (JoinGroup, SyncGroup, Heartbeat) inside a
	// consumer group (consumer_group_classic.go); nil otherwise.
	classic *classicMeta
	// ConsumerGroupCurrentMemberAssignment's fields.
	epoch, prevEpoch  int32
	state             MemberState
	assigned, pending assignment // pending: partitions pending revocation

	// Timers, not persisted.
	sessionDeadline   time.Time
	rebalanceDeadline time.Time // while UNREVOKED_PARTITIONS at rebalanceEpoch
	rebalanceEpoch    int32
	// A classic member's join and sync timeouts (Kafka's
	// consumerGroupJoinKey and consumerGroupSyncKey timers).
	joinDeadline, syncDeadline time.Time
}

// consumerGroup is the KIP-848 state of a group of type "consumer".
type consumerGroup struct {
	epoch           int32 // the group epoch
	metadataHash    int64 // the subscribed topics' metadata at the group epoch
	assignmentEpoch int32 // the target assignment's epoch
	members         map[string]*cgMember
	static          map[string]string     // instance id → member id
	target          map[string]assignment // member id → target assignment

	// partitionEpochs: the epoch of the member that holds each partition
	// (assigned or pending revocation); a partition is free for a new
	// owner only without an entry. Derived from the members' current
	// assignments.
	partitionEpochs map[TopicID]map[int32]int32

	// metaGen is the topic image generation metadataHash was last
	// checked against (not persisted: 0 after a load forces a check).
	metaGen uint64

	// regexes are the topics each subscribed regular expression resolved
	// to when last refreshed (Kafka's resolvedRegularExpressions, its
	// ConsumerGroupRegularExpression records): subscriptions resolve
	// through them, so a loaded group resolves as before the restart
	// until its first refresh.
	regexes map[string]*resolvedRegex
}

// resolvedRegex is ConsumerGroupRegularExpressionValue: the matching
// topics (sorted), the topic image generation they were resolved at and
// when (Unix ms).
type resolvedRegex struct {
	topics    []string
	version   int64
	timestamp int64
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		members: map[string]*cgMember{}, static: map[string]string{}, target: map[string]assignment{},
		partitionEpochs: map[TopicID]map[int32]int32{}, regexes: map[string]*resolvedRegex{},
	}
}

// ConsumerGroupState is the state Kafka's ConsumerGroup derives.
func (cg *consumerGroup) stateName() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch > cg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if !m.reconciledTo(cg.assignmentEpoch) {
			return "Reconciling"
		}
	}
	return "Stable"
}

// reconciledTo: the member is at the target epoch with nothing left to
// revoke or receive (Kafka's isReconciledTo).
func (m *cgMember) reconciledTo(epoch int32) bool {
	return m.state == MemberStable && m.epoch == epoch
}

func (cg *consumerGroup) sortedMembers() []*cgMember {
	ms := make([]*cgMember, 0, len(cg.members))
	for _, m := range cg.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].id < ms[j].id })
	return ms
}

// partitionEpoch is the epoch of p's current owner, or -1 when it is free.
func (cg *consumerGroup) partitionEpoch(t TopicID, p int32) int32 {
	if e, ok := cg.partitionEpochs[t][p]; ok {
		return e
	}
	return -1
}

func (cg *consumerGroup) setPartitionEpochs(a assignment, epoch int32) {
	for t, ps := range a {
		m := cg.partitionEpochs[t]
		if m == nil {
			m = map[int32]int32{}
			cg.partitionEpochs[t] = m
		}
		for _, p := range ps {
			m[p] = epoch
		}
	}
}

func (cg *consumerGroup) clearPartitionEpochs(a assignment) {
	for t, ps := range a {
		m := cg.partitionEpochs[t]
		for _, p := range ps {
			delete(m, p)
		}
		if len(m) == 0 {
			delete(cg.partitionEpochs, t)
		}
	}
}

// subscribedTopicNames are the topics some member subscribes to, by name
// or through its regex, that exist in im.
func (cg *consumerGroup) subscribedTopicNames(im *TopicImage) map[string]bool {
	out := map[string]bool{}
	for _, m := range cg.members {
		for _, t := range cg.topicsOf(m, im) {
			out[t] = true
		}
	}
	return out
}

// topicsOf are the existing topics m subscribes to, sorted: its names,
// and its regex's topics as last resolved (resolved now when the group
// has no resolution of it yet).
func (cg *consumerGroup) topicsOf(m *cgMember, im *TopicImage) []string {
	var out []string
	for _, n := range m.subscribedNames {
		if _, ok := im.ByName[n]; ok {
			out = append(out, n)
		}
	}
	if m.regex != "" {
		matched := resolveRegex(m.regex, im)
		if r := cg.regexes[m.regex]; r != nil {
			matched = r.topics
		}
		for _, n := range matched {
			if _, ok := im.ByName[n]; ok && !slices.Contains(m.subscribedNames, n) {
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// resolveRegex is the topics of im that re matches, sorted (Kafka's
// TopicRegexResolver; internal topics never match).
func resolveRegex(re string, im *TopicImage) []string {
	out := []string{}
	if c, err := compileTopicRegex(re); err == nil {
		for n := range im.ByName {
			if !kafkaInternalTopics[n] && c.MatchString(n) {
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// kafkaInternalTopics are never matched by a subscription regex (the Java
// consumer's exclude.internal.topics default); named, they are
// subscribed to like any topic.
var kafkaInternalTopics = map[string]bool{"__consumer_offsets": true, "__transaction_state": true}

// metadataHashOf hashes the metadata of the subscribed topics (name, id,
// partition count), FNV-1a over them in name order. Kafka 4.1 keeps such a
// hash in ConsumerGroupMetadataValue.MetadataHash (its own function, also
// over the racks of each partition's replicas); only equality matters.
func metadataHashOf(names map[string]bool, im *TopicImage) int64 {
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	h := uint64(14695981039346656037)
	mix := func(b byte) { h ^= uint64(b); h *= 1099511628211 }
	for _, n := range sorted {
		t := im.ByName[n]
		for i := 0; i < len(n); i++ {
			mix(n[i])
		}
		mix(0)
		for _, b := range t.ID {
			mix(b)
		}
		for i := 0; i < 4; i++ {
			mix(byte(t.Partitions >> (8 * i)))
		}
	}
	return int64(h)
}

// newUUIDString is a random UUID as Kafka's Uuid.toString writes it
// (URL-safe base64, no padding): the member id Kafka gives a v0 member
// joining without one.
func newUUIDString() string {
	var u [16]byte
	rand.Read(u[:])
	return base64.RawURLEncoding.EncodeToString(u[:])
}
