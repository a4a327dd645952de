package coordinator

import (
	"sort"
	"time"
)

// maxNameLen is the longest group id, member or instance id, protocol or
// topic name the group log can hold (its strings have int16 lengths).
const maxNameLen = 32767

// GroupConfig holds the broker settings the group coordinator honours.
type GroupConfig struct {
	MinSessionTimeout     time.Duration // group.min.session.timeout.ms
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms
	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms
	OffsetsRetention      time.Duration // offsets.retention.ms
	MaxMetadataSize       int           // offset.metadata.max.bytes (Kafka: 4096)

	// KIP-848 consumer groups (group.consumer.*).
	ConsumerSessionTimeout    time.Duration // group.consumer.session.timeout.ms
	ConsumerHeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms
	ConsumerMaxSize           int           // group.consumer.max.size
	ConsumerAssignors         []string      // group.consumer.assignors, by name ("uniform", "range"); the first is the default
	ConsumerMigrationPolicy   string        // group.consumer.migration.policy ("" is bidirectional, Kafka 4's default)
}

func (cfg GroupConfig) consumerMaxSize() int {
	if cfg.ConsumerMaxSize <= 0 {
		return int(^uint32(0) >> 1)
	}
	return cfg.ConsumerMaxSize
}

// groupCore is the deterministic group coordinator: every group's
// membership state machine and offsets. No goroutines, no clock, no I/O:
// callers pass the time in, and collect the replies to blocked requests
// (takeReplies) and the records to persist (takeRecords) after each call.
// Its model is Kafka's classic GroupCoordinator.
type groupCore struct {
	cfg    GroupConfig
	groups map[string]*group
	// deleted: the groups a recGroupDelete removed since the topic store
	// last took the records (nil without the topic store).
	deleted     map[string]*group
	newMemberID func(clientID string) string

	seq        uint64 // records applied; orders offsets the way log positions do in Kafka
	joinSeq    uint64
	replaying  bool
	replayNow  time.Time
	rebalances uint64 // completed joins (new generations)
	// fenced counts consumer-group members removed on a timer since the
	// metrics last took it, by reason (GroupMetrics.Fenced).
	fenced map[string]uint64

	replies []Reply
	records []record

	// image is the broker's topics as last handed in (consumer groups'
	// subscriptions resolve against it).
	image *TopicImage

	// maxRecord is the longest group log record body (the log's
	// Format.MaxRecord); a group whose state record would be longer is
	// not stored (checkGroupRecord).
	maxRecord int
	// knobs are the test seams (knobs.go), GroupsOptions.private; the
	// core reads skipCoreBound and hooks.AssignBeforeRevoke.
	knobs knobs
}

func newGroupCore(cfg GroupConfig, newMemberID func(clientID string) string) *groupCore {
	if cfg.MaxMetadataSize == 0 {
		cfg.MaxMetadataSize = 4096
	}
	if cfg.ConsumerSessionTimeout <= 0 {
		cfg.ConsumerSessionTimeout = 45 * time.Second
	}
	if cfg.ConsumerHeartbeatInterval <= 0 {
		cfg.ConsumerHeartbeatInterval = 5 * time.Second
	}
	return &groupCore{cfg: cfg, groups: map[string]*group{}, newMemberID: newMemberID, maxRecord: groupLogFormat.MaxRecord, image: emptyTopicImage}
}

// JoinRequest is a JoinGroup in the coordinator's terms.
type JoinRequest struct {
	Group, MemberID, InstanceID string
	ClientID, ClientHost        string
	ProtocolType                string
	Protocols                   []Protocol
	SessionTimeout              time.Duration
	RebalanceTimeout            time.Duration
	// RequireKnownMemberID (v4+, KIP-394): an unknown member gets a member
	// id with MEMBER_ID_REQUIRED and must join again with it.
	RequireKnownMemberID bool
	// SupportsSkipAssignment (v9+, KIP-814).
	SupportsSkipAssignment bool
}

// JoinMember is one member as the leader sees it in a JoinGroup response.
type JoinMember struct {
	MemberID, InstanceID string
	Metadata             []byte
}

// JoinResult answers a JoinGroup.
type JoinResult struct {
	Err            error
	MemberID       string
	Generation     int32
	ProtocolType   string
	Protocol       string
	Leader         string
	SkipAssignment bool
	Members        []JoinMember // the leader's only
}

// SyncRequest is a SyncGroup in the coordinator's terms.
type SyncRequest struct {
	Group, MemberID, InstanceID string
	Generation                  int32
	ProtocolType, Protocol      *string // v5+; nil: not checked
	Assignments                 map[string][]byte
}

// SyncResult answers a SyncGroup.
type SyncResult struct {
	Err          error
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// Reply is the answer to a blocked JoinGroup or SyncGroup.
type Reply struct {
	Waiter Waiter
	Join   *JoinResult
	Sync   *SyncResult
}

// LeaveMember is one member leaving (LeaveGroup v3+ batches them).
type LeaveMember struct{ MemberID, InstanceID string }

func (c *groupCore) takeReplies() []Reply {
	r := c.replies
	c.replies = nil
	return r
}

func (c *groupCore) takeRecords() []record {
	r := c.records
	c.records = nil
	return r
}

func (c *groupCore) replyJoin(w Waiter, r *JoinResult) {
	if w != 0 {
		c.replies = append(c.replies, Reply{Waiter: w, Join: r})
	}
}

func (c *groupCore) replySync(w Waiter, r *SyncResult) {
	if w != 0 {
		c.replies = append(c.replies, Reply{Waiter: w, Sync: r})
	}
}

func joinError(memberID string, err error) *JoinResult {
	return &JoinResult{Err: err, MemberID: memberID, Generation: -1}
}

// newMemberJoinTimeout is Kafka's classic group coordinator's new-member
// join timeout (classicGroupNewMemberJoinTimeoutMs, 5 minutes).
const newMemberJoinTimeout = 5 * time.Minute

// Join handles a JoinGroup; the answer for w is a Reply, now or when the
// rebalance completes.
func (c *groupCore) Join(now time.Time, req JoinRequest, w Waiter) {
	if req.Group == "" || len(req.Group) > maxNameLen {
		c.replyJoin(w, joinError(req.MemberID, ErrInvalidGroupID))
		return
	}
	if len(req.InstanceID) > maxNameLen || len(req.ProtocolType) > maxNameLen || len(req.ClientHost) > maxNameLen {
		c.replyJoin(w, joinError(req.MemberID, ErrInvalidRequest))
		return
	}
	for _, p := range req.Protocols {
		if len(p.Name) > maxNameLen {
			c.replyJoin(w, joinError(req.MemberID, ErrInvalidRequest))
			return
		}
	}
	if req.SessionTimeout < c.cfg.MinSessionTimeout || req.SessionTimeout > c.cfg.MaxSessionTimeout {
		c.replyJoin(w, joinError(req.MemberID, ErrInvalidSessionTimeout))
		return
	}
	g := c.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			c.replyJoin(w, joinError(req.MemberID, ErrUnknownMemberID))
			return
		}
		g = newGroup(req.Group, now)
		c.groups[req.Group] = g
	}
	if g.cg != nil {
		if len(g.cg.members) > 0 {
			// A classic member joining a consumer group is served by it
			// (consumer_group_classic.go).
			c.classicJoinToConsumerGroup(now, g, req, w)
			return
		}
		// An empty consumer group becomes a classic group (Kafka's
		// maybeDeleteEmptyConsumerGroup); its offsets stay.
		c.dropRegexes(req.Group, g.cg, func(string) bool { return true })
		c.emit(record{typ: recCGTargetMetadata, group: req.Group, cg: &cgRecord{tombstone: true}})
		c.emit(record{typ: recCGMetadata, group: req.Group, cg: &cgRecord{tombstone: true}})
	}
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		c.replyJoin(w, joinError(req.MemberID, ErrInconsistentGroupProtocol))
		return
	}
	if req.MemberID == "" {
		c.joinUnknown(now, g, req, w)
	} else {
		c.joinKnown(now, g, req, w)
	}
}

func (c *groupCore) joinUnknown(now time.Time, g *group, req JoinRequest, w Waiter) {
	prefix := req.ClientID
	if req.InstanceID != "" {
		prefix = req.InstanceID
	}
	id := c.newMemberID(prefix)
	switch {
	case req.InstanceID != "" && g.static[req.InstanceID] != "":
		c.replaceStaticMember(now, g, g.members[g.static[req.InstanceID]], id, req, w)
	case req.InstanceID == "" && req.RequireKnownMemberID:
		g.pendingMembers[id] = now.Add(req.SessionTimeout)
		c.replyJoin(w, joinError(id, ErrMemberIDRequired))
	default:
		c.addMemberAndRebalance(now, g, id, req, w)
	}
}

func (c *groupCore) joinKnown(now time.Time, g *group, req JoinRequest, w Waiter) {
	if _, ok := g.pendingMembers[req.MemberID]; ok && req.InstanceID == "" {
		c.addMemberAndRebalance(now, g, req.MemberID, req, w)
		return
	}
	m, err := g.validateMember(req.MemberID, req.InstanceID)
	if err != nil {
		c.replyJoin(w, joinError(req.MemberID, err))
		return
	}
	switch g.state {
	case StatePreparingRebalance:
		c.updateMemberAndRebalance(now, g, m, req, w)
	case StateCompletingRebalance:
		if sameProtocols(m.protocols, req.Protocols) {
			m.lastHeartbeat = now
			c.replyJoin(w, c.joinResult(g, m, false))
		} else {
			c.updateMemberAndRebalance(now, g, m, req, w)
		}
	case StateStable:
		if m.id == g.leader || !sameProtocols(m.protocols, req.Protocols) {
			c.updateMemberAndRebalance(now, g, m, req, w)
		} else {
			m.lastHeartbeat = now
			c.replyJoin(w, c.joinResult(g, m, false))
		}
	default:
		c.replyJoin(w, joinError(req.MemberID, ErrUnknownMemberID))
	}
}

// joinResult is the current generation as m sees it.
func (c *groupCore) joinResult(g *group, m *member, skipAssignment bool) *JoinResult {
	r := &JoinResult{
		MemberID: m.id, Generation: g.generation, ProtocolType: g.protocolType,
		Protocol: g.protocol, Leader: g.leader, SkipAssignment: skipAssignment,
	}
	if m.id == g.leader {
		for _, o := range g.sortedMembers() {
			r.Members = append(r.Members, JoinMember{MemberID: o.id, InstanceID: o.instanceID, Metadata: o.metadataFor(g.protocol)})
		}
	}
	return r
}

func (c *groupCore) setMemberFromRequest(m *member, req JoinRequest) {
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	m.sessionTimeout, m.rebalanceTimeout = req.SessionTimeout, req.RebalanceTimeout
	m.protocolType, m.protocols = req.ProtocolType, req.Protocols
}

func (c *groupCore) setJoinWaiter(m *member, w Waiter) {
	if m.joinWaiter != 0 && m.joinWaiter != w {
		c.replyJoin(m.joinWaiter, joinError(m.id, ErrRebalanceInProgress))
	}
	m.joinWaiter, m.awaitingJoin = w, true
}

func (c *groupCore) addMemberAndRebalance(now time.Time, g *group, id string, req JoinRequest, w Waiter) {
	c.joinSeq++
	m := &member{id: id, instanceID: req.InstanceID, joinedSeq: c.joinSeq, lastHeartbeat: now,
		newJoinDeadline: now.Add(newMemberJoinTimeout)}
	c.setMemberFromRequest(m, req)
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	g.members[id] = m
	delete(g.pendingMembers, id)
	if req.InstanceID != "" {
		g.static[req.InstanceID] = id
	}
	if g.leader == "" {
		g.leader = id
	}
	c.setJoinWaiter(m, w)
	if g.state == StatePreparingRebalance && !g.initialDelayUntil.IsZero() {
		g.newMemberAdded = true
	}
	c.maybePrepareRebalance(now, g)
}

func (c *groupCore) updateMemberAndRebalance(now time.Time, g *group, m *member, req JoinRequest, w Waiter) {
	c.setMemberFromRequest(m, req)
	m.lastHeartbeat = now
	c.setJoinWaiter(m, w)
	c.maybePrepareRebalance(now, g)
}

// replaceStaticMember: a static member rejoins with an unknown member id
// (a restarted client): the instance gets a new member id and the old one
// is fenced. A stable group whose selected protocol does not change keeps
// its assignment without a rebalance (KIP-345); a restarted leader is told
// to skip the assignment (v9, KIP-814), and before v9 is answered with the
// old leader id so that it acts as a follower, as Kafka does.
func (c *groupCore) replaceStaticMember(now time.Time, g *group, old *member, newID string, req JoinRequest, w Waiter) {
	c.replyJoin(old.joinWaiter, joinError(old.id, ErrFencedInstanceID))
	c.replySync(old.syncWaiter, &SyncResult{Err: ErrFencedInstanceID})
	oldLeader := g.leader
	delete(g.members, old.id)
	m := &member{id: newID, instanceID: old.instanceID, joinedSeq: old.joinedSeq, assignment: old.assignment, lastHeartbeat: now}
	c.setMemberFromRequest(m, req)
	g.members[newID] = m
	g.static[m.instanceID] = newID
	if g.pendingSync[old.id] {
		delete(g.pendingSync, old.id)
		g.pendingSync[newID] = true
	}
	if g.leader == old.id {
		g.leader = newID
	}
	switch g.state {
	case StateStable:
		if g.selectProtocol() != g.protocol {
			c.setJoinWaiter(m, w)
			c.maybePrepareRebalance(now, g)
			return
		}
		if err := c.storeGroup(now, g); err != nil {
			// As Kafka does when the record cannot be stored: undo the
			// replacement (the old member id stays, already told it is
			// fenced) and answer this JoinGroup with the error.
			delete(g.members, newID)
			g.members[old.id] = old
			g.static[old.instanceID] = old.id
			if g.pendingSync[newID] {
				delete(g.pendingSync, newID)
				g.pendingSync[old.id] = true
			}
			g.leader = oldLeader
			old.joinWaiter, old.syncWaiter = 0, 0
			c.replyJoin(w, joinError(req.MemberID, err))
			return
		}
		if req.SupportsSkipAssignment {
			c.replyJoin(w, c.joinResult(g, m, m.id == g.leader))
		} else {
			c.replyJoin(w, &JoinResult{MemberID: newID, Generation: g.generation, ProtocolType: g.protocolType,
				Protocol: g.protocol, Leader: oldLeader})
		}
	default: // CompletingRebalance: the leader may be assigning the old id; PreparingRebalance
		c.setJoinWaiter(m, w)
		c.maybePrepareRebalance(now, g)
	}
}

func (c *groupCore) maybePrepareRebalance(now time.Time, g *group) {
	switch g.state {
	case StateStable, StateCompletingRebalance, StateEmpty:
		c.prepareRebalance(now, g)
	}
	c.tryCompleteJoin(now, g, false)
}

func (c *groupCore) prepareRebalance(now time.Time, g *group) {
	if g.state == StateCompletingRebalance {
		for _, m := range g.sortedMembers() {
			c.replySync(m.syncWaiter, &SyncResult{Err: ErrRebalanceInProgress})
			m.syncWaiter = 0
			m.assignment = nil
		}
	}
	g.pendingSync = map[string]bool{}
	g.syncDeadline = time.Time{}
	timeout := g.maxRebalanceTimeout()
	g.rebalanceDeadline = now.Add(timeout)
	g.initialDelayUntil, g.newMemberAdded = time.Time{}, false
	if g.state == StateEmpty && c.cfg.InitialRebalanceDelay > 0 {
		g.initialDelayUntil = now.Add(min(c.cfg.InitialRebalanceDelay, timeout))
	}
	g.transition(StatePreparingRebalance, now)
}

// tryCompleteJoin ends PreparingRebalance when every member has rejoined
// (and the initial delay is over), or when force (the rebalance timeout).
func (c *groupCore) tryCompleteJoin(now time.Time, g *group, force bool) {
	if g.state != StatePreparingRebalance {
		return
	}
	if !force && (!g.initialDelayUntil.IsZero() || !g.allMembersJoined()) {
		return
	}
	// Dynamic members that did not rejoin are out; static ones stay until
	// their session times out.
	for _, m := range g.sortedMembers() {
		if !m.awaitingJoin && m.instanceID == "" {
			c.removeMember(g, m)
		}
	}
	g.initialDelayUntil, g.newMemberAdded = time.Time{}, false
	if len(g.members) == 0 {
		g.generation++
		g.protocol, g.leader = "", ""
		g.rebalanceDeadline = time.Time{}
		g.transition(StateEmpty, now)
		c.rebalances++
		// No members: the record holds two names of at most 32767 bytes,
		// far below the group log's bound.
		_ = c.storeGroup(now, g)
		return
	}
	if l := g.members[g.leader]; l == nil || !l.awaitingJoin {
		elected := false
		for _, m := range g.sortedMembers() {
			if m.awaitingJoin {
				g.leader, elected = m.id, true
				break
			}
		}
		if !elected {
			// Only static members that have not rejoined: wait another
			// rebalance timeout for them (or for their sessions to end).
			g.rebalanceDeadline = now.Add(g.maxRebalanceTimeout())
			return
		}
	}
	g.generation++
	g.protocol = g.selectProtocol()
	g.rebalanceDeadline = time.Time{}
	g.transition(StateCompletingRebalance, now)
	c.rebalances++
	g.syncDeadline = now.Add(g.maxRebalanceTimeout())
	for _, m := range g.sortedMembers() {
		g.pendingSync[m.id] = true
		m.assignment = nil
		if m.awaitingJoin {
			c.replyJoin(m.joinWaiter, c.joinResult(g, m, false))
			m.joinWaiter, m.awaitingJoin = 0, false
			m.lastHeartbeat = now
			m.newJoinDeadline = time.Time{}
		}
	}
}

// removeMember takes m out of g without triggering anything.
func (c *groupCore) removeMember(g *group, m *member) {
	delete(g.members, m.id)
	if m.instanceID != "" && g.static[m.instanceID] == m.id {
		delete(g.static, m.instanceID)
	}
	delete(g.pendingSync, m.id)
	if g.leader == m.id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

// removeMemberAndUpdateGroup: m left or timed out.
func (c *groupCore) removeMemberAndUpdateGroup(now time.Time, g *group, m *member) {
	c.replyJoin(m.joinWaiter, joinError(m.id, ErrUnknownMemberID))
	c.replySync(m.syncWaiter, &SyncResult{Err: ErrUnknownMemberID})
	m.joinWaiter, m.syncWaiter = 0, 0
	c.removeMember(g, m)
	switch g.state {
	case StateStable, StateCompletingRebalance:
		c.prepareRebalance(now, g)
		c.tryCompleteJoin(now, g, false)
	case StatePreparingRebalance:
		c.tryCompleteJoin(now, g, false)
	}
}

// Sync handles a SyncGroup; the answer for w is a Reply, now or when the
// leader's assignment arrives.
func (c *groupCore) Sync(now time.Time, req SyncRequest, w Waiter) {
	g := c.groups[req.Group]
	if g == nil || (g.cg != nil && len(g.cg.members) == 0) {
		c.replySync(w, &SyncResult{Err: ErrUnknownMemberID})
		return
	}
	if g.cg != nil {
		c.classicSyncToConsumerGroup(now, g, req, w)
		return
	}
	m, err := g.validateMember(req.MemberID, req.InstanceID)
	switch {
	case err != nil:
		c.replySync(w, &SyncResult{Err: err})
		return
	case req.Generation != g.generation:
		c.replySync(w, &SyncResult{Err: ErrIllegalGeneration})
		return
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		c.replySync(w, &SyncResult{Err: ErrInconsistentGroupProtocol})
		return
	}
	switch g.state {
	case StatePreparingRebalance:
		c.replySync(w, &SyncResult{Err: ErrRebalanceInProgress})
	case StateCompletingRebalance:
		m.lastHeartbeat = now
		if m.syncWaiter != 0 && m.syncWaiter != w {
			c.replySync(m.syncWaiter, &SyncResult{Err: ErrRebalanceInProgress})
		}
		m.syncWaiter = w
		c.synced(g, m)
		if m.id != g.leader {
			return
		}
		for _, o := range g.members {
			o.assignment = req.Assignments[o.id]
		}
		if err := c.checkGroupRecord(g); err != nil {
			// The group's state is too long to store: as Kafka does when
			// its storeGroup fails (resetAndPropagateAssignmentWithError,
			// then maybePrepareRebalanceOrCompleteJoin), every member
			// waiting in SyncGroup gets the error (UNKNOWN_SERVER_ERROR),
			// no assignment is kept and the group rebalances: the
			// members rejoin.
			for _, o := range g.sortedMembers() {
				o.assignment = nil
				c.replySync(o.syncWaiter, &SyncResult{Err: err})
				o.syncWaiter = 0
			}
			c.prepareRebalance(now, g)
			c.tryCompleteJoin(now, g, false)
			return
		}
		g.transition(StateStable, now)
		_ = c.storeGroup(now, g) // checked above: its length does not depend on the state
		for _, o := range g.sortedMembers() {
			c.replySync(o.syncWaiter, c.syncResult(g, o))
			o.syncWaiter = 0
		}
	case StateStable:
		m.lastHeartbeat = now
		c.synced(g, m)
		c.replySync(w, c.syncResult(g, m))
	default:
		c.replySync(w, &SyncResult{Err: ErrUnknownMemberID})
	}
}

func (c *groupCore) synced(g *group, m *member) {
	delete(g.pendingSync, m.id)
	if len(g.pendingSync) == 0 {
		g.syncDeadline = time.Time{}
	}
}

func (c *groupCore) syncResult(g *group, m *member) *SyncResult {
	a := m.assignment
	if a == nil {
		a = []byte{}
	}
	return &SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: a}
}

// Heartbeat handles a Heartbeat.
func (c *groupCore) Heartbeat(now time.Time, groupID, memberID, instanceID string, generation int32) error {
	g := c.groups[groupID]
	if g == nil {
		return ErrUnknownMemberID
	}
	if g.cg != nil {
		return c.classicHeartbeatToConsumerGroup(now, g, memberID, instanceID, generation)
	}
	m, err := g.validateMember(memberID, instanceID)
	switch {
	case err != nil:
		return err
	case generation != g.generation:
		return ErrIllegalGeneration
	}
	switch g.state {
	case StateCompletingRebalance, StateStable:
		m.lastHeartbeat = now
		return nil
	case StatePreparingRebalance:
		m.lastHeartbeat = now
		return ErrRebalanceInProgress
	}
	return ErrUnknownMemberID
}

// Leave handles a LeaveGroup: one error per member, in order, or a
// top-level error (an unknown group: UNKNOWN_MEMBER_ID, as Kafka's
// coordinator answers). A member named by instance id alone is removed
// administratively; otherwise it is validated as in every request.
func (c *groupCore) Leave(now time.Time, groupID string, leaving []LeaveMember) ([]error, error) {
	g := c.groups[groupID]
	if g == nil {
		return nil, ErrUnknownMemberID
	}
	if g.cg != nil {
		return c.classicLeaveToConsumerGroup(g, leaving), nil
	}
	errs := make([]error, len(leaving))
	for i, l := range leaving {
		switch _, pending := g.pendingMembers[l.MemberID]; {
		case l.MemberID == "":
			id, ok := g.static[l.InstanceID]
			if l.InstanceID == "" || !ok {
				errs[i] = ErrUnknownMemberID
				continue
			}
			c.removeMemberAndUpdateGroup(now, g, g.members[id])
		case pending:
			delete(g.pendingMembers, l.MemberID)
			c.tryCompleteJoin(now, g, false)
		default:
			m, err := g.validateMember(l.MemberID, l.InstanceID)
			if err != nil {
				errs[i] = err
				continue
			}
			c.removeMemberAndUpdateGroup(now, g, m)
		}
	}
	return errs, nil
}

// Tick runs every timer that is due at now: session timeouts, pending
// member ids, the initial rebalance delay, rebalance and sync timeouts.
func (c *groupCore) Tick(now time.Time) {
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if g := c.groups[id]; g != nil && g.cg != nil {
			c.tickConsumerGroup(now, id, g, c.image)
		} else if g != nil {
			c.tickGroup(now, g)
		}
	}
}

func (c *groupCore) tickGroup(now time.Time, g *group) {
	pending := make([]string, 0, len(g.pendingMembers))
	for id := range g.pendingMembers {
		pending = append(pending, id)
	}
	sort.Strings(pending)
	for _, id := range pending {
		if !now.Before(g.pendingMembers[id]) {
			delete(g.pendingMembers, id)
			c.tryCompleteJoin(now, g, false)
		}
	}
	// A new member whose first JoinGroup is unanswered after Kafka's
	// new-member join timeout is removed, its JoinGroup answered
	// UNKNOWN_MEMBER_ID (it retries if it is still there): a client that
	// went away while waiting does not hold the rebalance.
	for _, m := range g.sortedMembers() {
		if g.members[m.id] == m && m.awaitingJoin && !m.newJoinDeadline.IsZero() && !now.Before(m.newJoinDeadline) {
			c.removeMemberAndUpdateGroup(now, g, m)
		}
	}
	// Session expiry, as Kafka's heartbeat expiration: every member, static
	// (group.instance.id) or dynamic, that has not been heard from for its
	// session.timeout.ms is removed; static members never send LeaveGroup
	// on close, so this is how they go. A member waiting in JoinGroup or
	// SyncGroup has its heartbeat satisfied (Kafka's hasSatisfiedHeartbeat)
	// until the rebalance answers it. The clock is the caller's now: the
	// coordinator loop's ticker (every TickInterval, time.Now(), so a
	// monotonic reading); after a restart sessions start again at load
	// time.
	for _, m := range g.sortedMembers() {
		if g.members[m.id] != m || m.awaitingJoin || m.syncWaiter != 0 {
			continue
		}
		if now.Sub(m.lastHeartbeat) >= m.sessionTimeout {
			c.removeMemberAndUpdateGroup(now, g, m)
		}
	}
	if g.state == StatePreparingRebalance {
		switch {
		case !g.initialDelayUntil.IsZero():
			if now.Before(g.initialDelayUntil) {
				break
			}
			if g.newMemberAdded && now.Before(g.rebalanceDeadline) {
				g.newMemberAdded = false
				g.initialDelayUntil = minTime(now.Add(c.cfg.InitialRebalanceDelay), g.rebalanceDeadline)
				break
			}
			c.tryCompleteJoin(now, g, true)
		case !now.Before(g.rebalanceDeadline):
			c.tryCompleteJoin(now, g, true)
		}
	}
	if (g.state == StateCompletingRebalance || g.state == StateStable) && len(g.pendingSync) > 0 && !now.Before(g.syncDeadline) {
		for _, m := range g.sortedMembers() {
			if g.pendingSync[m.id] {
				c.replyJoin(m.joinWaiter, joinError(m.id, ErrUnknownMemberID))
				c.replySync(m.syncWaiter, &SyncResult{Err: ErrUnknownMemberID})
				c.removeMember(g, m)
			}
		}
		c.prepareRebalance(now, g)
		c.tryCompleteJoin(now, g, false)
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
