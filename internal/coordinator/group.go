package coordinator

import (
	"sort"
	"time"
)

// GroupState is a classic consumer group's state, as Kafka's GroupMetadata
// names them. The numbers are persisted (group metadata records): never
// renumber.
type GroupState int8

const (
	StateEmpty               GroupState = 0
	StatePreparingRebalance  GroupState = 1
	StateCompletingRebalance GroupState = 2
	StateStable              GroupState = 3
	StateDead                GroupState = 4
)

// GroupStates lists every state, for metrics.
var GroupStates = []GroupState{StateEmpty, StatePreparingRebalance, StateCompletingRebalance, StateStable, StateDead}

func (s GroupState) String() string {
	switch s {
	case StateEmpty:
		return "Empty"
	case StatePreparingRebalance:
		return "PreparingRebalance"
	case StateCompletingRebalance:
		return "CompletingRebalance"
	case StateStable:
		return "Stable"
	case StateDead:
		return "Dead"
	}
	return "Unknown"
}

// Waiter identifies one blocked JoinGroup or SyncGroup request; the core
// answers it through a Reply. 0 is "nobody waiting".
type Waiter uint64

// Protocol is one (name, metadata) a member supports, in preference order.
type Protocol struct {
	Name     string
	Metadata []byte
}

// member is one member of a group.
type member struct {
	id               string
	instanceID       string // "" for a dynamic member
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []Protocol
	assignment       []byte

	joinWaiter    Waiter // a JoinGroup is waiting for the rebalance to complete
	awaitingJoin  bool   // has (re)joined in the current PreparingRebalance
	syncWaiter    Waiter // a SyncGroup is waiting for the leader's assignment
	lastHeartbeat time.Time
	joinedSeq     uint64 // join order, for a deterministic leader choice
	// newJoinDeadline: a new member whose first JoinGroup is still
	// unanswered then is removed (Kafka's new-member join timeout); zero
	// once a rebalance has answered it.
	newJoinDeadline time.Time
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// sameProtocols: a rejoin with unchanged protocols needs no rebalance.
func sameProtocols(a, b []Protocol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || string(a[i].Metadata) != string(b[i].Metadata) {
			return false
		}
	}
	return true
}

// group is one classic group: membership and committed offsets.
type group struct {
	id           string
	state        GroupState
	stateSince   time.Time
	protocolType string // "" until a member joins (simple commit groups)
	protocol     string
	generation   int32
	leader       string

	members        map[string]*member
	static         map[string]string    // instance id → member id
	pendingMembers map[string]time.Time // KIP-394: member ids handed out, not yet joined; → expiry
	pendingSync    map[string]bool      // members of this generation that have not synced yet

	initialDelayUntil time.Time // PreparingRebalance from Empty: group.initial.rebalance.delay.ms
	newMemberAdded    bool      // during the initial delay
	rebalanceDeadline time.Time // PreparingRebalance: complete the join at this time at the latest
	syncDeadline      time.Time // pendingSync members are removed at this time

	lastMeta *groupMetadata // the membership last persisted, rewritten by compaction
	// cg is the KIP-848 state of a group of type "consumer"; nil for a
	// classic group (consumer_group.go).
	cg         *consumerGroup
	offsets    map[TopicPartition]*offsetEntry
	pendingTxn map[int64]map[TopicPartition]*offsetEntry // producer id → staged offsets
}

// offsetEntry is a committed or staged offset and the sequence number of
// the record that wrote it: the later record wins (Kafka compares log
// offsets the same way when a transaction's offsets are committed).
type offsetEntry struct {
	OffsetAndMetadata
	seq           uint64
	producerEpoch int16 // staged only
}

func newGroup(id string, now time.Time) *group {
	return &group{
		id: id, state: StateEmpty, stateSince: now, generation: 0,
		members: map[string]*member{}, static: map[string]string{}, pendingMembers: map[string]time.Time{},
		pendingSync: map[string]bool{}, offsets: map[TopicPartition]*offsetEntry{},
		pendingTxn: map[int64]map[TopicPartition]*offsetEntry{},
	}
}

func (g *group) transition(to GroupState, now time.Time) {
	g.state = to
	g.stateSince = now
}

// sortedMembers is the members in join order.
func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].joinedSeq != ms[j].joinedSeq {
			return ms[i].joinedSeq < ms[j].joinedSeq
		}
		return ms[i].id < ms[j].id
	})
	return ms
}

// candidateProtocols are the protocols every member supports.
func (g *group) candidateProtocols() map[string]bool {
	var cand map[string]bool
	for _, m := range g.members {
		names := map[string]bool{}
		for _, p := range m.protocols {
			if cand == nil || cand[p.Name] {
				names[p.Name] = true
			}
		}
		cand = names
	}
	return cand
}

// supportsProtocols is Kafka's GroupMetadata.supportsProtocols: a new
// member must share the protocol type and at least one protocol with every
// member.
func (g *group) supportsProtocols(protocolType string, protocols []Protocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	cand := g.candidateProtocols()
	for _, p := range protocols {
		if cand[p.Name] {
			return true
		}
	}
	return false
}

// selectProtocol: each member votes for its most preferred protocol that
// all members support; most votes wins, ties go to the leader's preference.
func (g *group) selectProtocol() string {
	cand := g.candidateProtocols()
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if cand[p.Name] {
				votes[p.Name]++
				break
			}
		}
	}
	var order []Protocol
	if l := g.members[g.leader]; l != nil {
		order = l.protocols
	} else if ms := g.sortedMembers(); len(ms) > 0 {
		order = ms[0].protocols
	}
	best, bestVotes := "", -1
	for _, p := range order {
		if cand[p.Name] && votes[p.Name] > bestVotes {
			best, bestVotes = p.Name, votes[p.Name]
		}
	}
	return best
}

func (g *group) allMembersJoined() bool {
	if len(g.pendingMembers) > 0 {
		return false
	}
	for _, m := range g.members {
		if !m.awaitingJoin {
			return false
		}
	}
	return true
}

func (g *group) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// validateMember is Kafka's ClassicGroup.validateMember: a request naming
// an instance id must carry the member id that instance currently holds
// (FENCED_INSTANCE_ID), and the member must exist (UNKNOWN_MEMBER_ID).
func (g *group) validateMember(memberID, instanceID string) (*member, error) {
	if instanceID != "" {
		cur, ok := g.static[instanceID]
		if !ok {
			return nil, ErrUnknownMemberID
		}
		if cur != memberID {
			return nil, ErrFencedInstanceID
		}
	}
	m := g.members[memberID]
	if m == nil {
		return nil, ErrUnknownMemberID
	}
	return m, nil
}

func (g *group) hasPendingTxn(tp TopicPartition) bool {
	for _, offs := range g.pendingTxn {
		if _, ok := offs[tp]; ok {
			return true
		}
	}
	return false
}
