package coordinator

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"
)

// ConsumerHeartbeatRequest is a ConsumerGroupHeartbeat in the
// coordinator's terms. A nil pointer or slice is Kafka's null: "unchanged
// since the last heartbeat".
type ConsumerHeartbeatRequest struct {
	Version              int16
	Group, MemberID      string
	MemberEpoch          int32
	InstanceID, RackID   *string
	RebalanceTimeoutMs   int32 // -1: unchanged
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	ServerAssignor       *string
	Owned                []OwnedTopic // nil: unchanged
	ClientID, ClientHost string
	// SessionTimeout and HeartbeatInterval are the group's effective
	// values (its group configs, else the broker's); 0: the broker's.
	SessionTimeout, HeartbeatInterval time.Duration
}

// ConsumerHeartbeatResult answers a ConsumerGroupHeartbeat.
type ConsumerHeartbeatResult struct {
	Err                 error
	MemberID            string
	MemberEpoch         int32
	HeartbeatIntervalMs int32
	// Assignment is sent when HasAssignment: on a full request or when
	// the member's assigned partitions changed, as Kafka.
	HasAssignment bool
	Assignment    []OwnedTopic
}

// compileTopicRegex compiles a SubscribedTopicRegex. Kafka uses RE2/J
// (com.google.re2j) and matches the whole topic name; Go's regexp is RE2
// too, so the syntax is the same but for the few RE2/J extensions (Java's
// \p{javaLowerCase}-style classes are refused here), and the match is
// anchored the same way.
func compileTopicRegex(s string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + s + `)$`)
}

func (c *groupCore) consumerAssignors() []string {
	if len(c.cfg.ConsumerAssignors) == 0 {
		return []string{"uniform", "range"}
	}
	return c.cfg.ConsumerAssignors
}

// validateConsumerHeartbeat is Kafka's
// throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (c *groupCore) validateConsumerHeartbeat(req ConsumerHeartbeatRequest) error {
	bad := func(msg string) error { return fmt.Errorf("%w: %s", ErrInvalidRequest, msg) }
	switch {
	case req.Group == "":
		return bad("GroupId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return bad("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return bad("RackId can't be empty.")
	case len(req.Group) > maxNameLen || len(req.MemberID) > maxNameLen || (req.InstanceID != nil && len(*req.InstanceID) > maxNameLen) ||
		(req.RackID != nil && len(*req.RackID) > maxNameLen) || (req.SubscribedTopicRegex != nil && len(*req.SubscribedTopicRegex) > maxNameLen) ||
		(req.ServerAssignor != nil && len(*req.ServerAssignor) > maxNameLen) || len(req.ClientHost) > maxNameLen:
		return bad("a name is longer than 32767 bytes")
	}
	for _, n := range req.SubscribedTopicNames {
		if len(n) > maxNameLen {
			return bad("a topic name is longer than 32767 bytes")
		}
	}
	// v1 (KIP-1082): the member id is the client's, always set.
	if req.Version >= 1 && req.MemberID == "" {
		return bad("MemberId can't be empty.")
	}
	switch e := req.MemberEpoch; {
	case e > 0 || e == leaveEpoch:
		if req.MemberID == "" {
			return bad("MemberId can't be empty.")
		}
	case e == joinEpoch:
		if req.RebalanceTimeoutMs == -1 {
			return bad("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Owned == nil || len(req.Owned) > 0 {
			return bad("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return bad("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	case e == staticLeaveEpoch:
		if req.MemberID == "" {
			return bad("MemberId can't be empty.")
		}
		if req.InstanceID == nil {
			return bad("InstanceId can't be null.")
		}
	default:
		return bad("MemberEpoch is invalid.")
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := compileTopicRegex(*req.SubscribedTopicRegex); err != nil {
			return fmt.Errorf("%w: SubscribedTopicRegex %q: %v", ErrInvalidRegularExpression, *req.SubscribedTopicRegex, err)
		}
	}
	if req.ServerAssignor != nil && !slices.Contains(c.consumerAssignors(), *req.ServerAssignor) {
		return fmt.Errorf("%w: ServerAssignor %s is not supported. Supported assignors: %v.", ErrUnsupportedAssignor, *req.ServerAssignor, c.consumerAssignors())
	}
	return nil
}

func (c *groupCore) sessionTimeout(req ConsumerHeartbeatRequest) time.Duration {
	if req.SessionTimeout > 0 {
		return req.SessionTimeout
	}
	return c.cfg.ConsumerSessionTimeout
}

func (c *groupCore) heartbeatInterval(req ConsumerHeartbeatRequest) int32 {
	d := req.HeartbeatInterval
	if d <= 0 {
		d = c.cfg.ConsumerHeartbeatInterval
	}
	return int32(d / time.Millisecond)
}

// ConsumerHeartbeat handles a ConsumerGroupHeartbeat (Kafka's
// GroupMetadataManager.consumerGroupHeartbeat): join, leave, or a
// heartbeat that reconciles the member one step towards its target.
func (c *groupCore) ConsumerHeartbeat(now time.Time, im *TopicImage, req ConsumerHeartbeatRequest) ConsumerHeartbeatResult {
	fail := func(err error) ConsumerHeartbeatResult {
		return ConsumerHeartbeatResult{Err: err, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	}
	if err := c.validateConsumerHeartbeat(req); err != nil {
		return fail(err)
	}
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return c.consumerLeave(now, im, req)
	}
	g := c.groups[req.Group]
	joining := req.MemberEpoch == joinEpoch
	switch {
	case g == nil && !joining:
		return fail(fmt.Errorf("%w: Consumer group %s not found.", ErrGroupIDNotFound, req.Group))
	case g != nil && g.cg == nil && !(joining && classicGroupIsEmpty(g)):
		// A classic group with members: Kafka's online upgrade
		// (validateOnlineUpgrade, convertToConsumerGroup), when the
		// policy allows it and the group speaks the consumer protocol.
		if !joining || !c.canUpgrade(g) {
			return fail(fmt.Errorf("%w: Group %s is not a consumer group.", ErrGroupIDNotFound, req.Group))
		}
		if len(g.members) >= c.cfg.consumerMaxSize() {
			return fail(fmt.Errorf("%w: The consumer group has reached its maximum capacity of %d members.", ErrGroupMaxSize, c.cfg.consumerMaxSize()))
		}
		if err := c.convertToConsumerGroup(now, g, im); err != nil {
			return fail(err)
		}
	}
	var cg *consumerGroup
	if g != nil {
		cg = g.cg
	}
	memberID := req.MemberID
	if memberID == "" {
		memberID = newUUIDString()
	}
	if cg != nil && len(cg.members) >= c.cfg.consumerMaxSize() && cg.members[memberID] == nil {
		return fail(fmt.Errorf("%w: The consumer group has reached its maximum capacity of %d members.", ErrGroupMaxSize, c.cfg.consumerMaxSize()))
	}
	owned := ownedAssignment(req.Owned)

	// The member: existing, new, or a static member replacing its
	// instance's previous member.
	var old *cgMember // the member as it was (nil: new)
	var replaced *cgMember
	var lookup *cgMember
	if cg != nil {
		lookup = cg.members[memberID]
	}
	if req.InstanceID == nil {
		if lookup == nil && !joining {
			return fail(fmt.Errorf("%w: Member %s is not a member of group %s.", ErrUnknownMemberID, memberID, req.Group))
		}
		old = lookup
	} else {
		var existing *cgMember
		if cg != nil {
			existing = cg.members[cg.static[*req.InstanceID]]
		}
		switch {
		case joining && existing == nil:
			old = lookup
		case joining && existing.id == memberID:
			old = existing
		case joining:
			if existing.epoch != staticLeaveEpoch && existing.classic == nil {
				return fail(fmt.Errorf("%w: Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.",
					ErrUnreleasedInstanceID, memberID, *req.InstanceID, existing.id))
			}
			replaced = existing
		case existing == nil:
			return fail(fmt.Errorf("%w: Instance id %s is unknown.", ErrUnknownMemberID, *req.InstanceID))
		case existing.id != memberID:
			return fail(fmt.Errorf("%w: Static member %s with instance id %s was fenced by member %s.", ErrFencedInstanceID, memberID, *req.InstanceID, existing.id))
		default:
			old = existing
		}
	}
	if old != nil && !joining {
		if err := checkMemberEpoch(old, req.MemberEpoch, owned); err != nil {
			return fail(err)
		}
	}

	// From here on the request is accepted: records follow.
	if g == nil || g.cg == nil {
		c.emit(record{typ: recCGMetadata, group: req.Group, cg: &cgRecord{epoch: 0}})
		g = c.groups[req.Group]
	}
	cg = g.cg
	if replaced != nil {
		old = c.replaceCGMember(req.Group, cg, replaced, memberID)
	}

	// What the member was assigned before this heartbeat (old is the
	// live member, which the records below change in place).
	var prevAssigned assignment
	if old != nil {
		prevAssigned = old.assigned.clone()
	}

	// 1. The member's metadata.
	upd := &cgMember{id: memberID, epoch: 0, state: MemberStable, assigned: assignment{}, pending: assignment{}}
	if old != nil {
		cp := *old
		upd = &cp
	}
	if req.InstanceID != nil {
		upd.instanceID = *req.InstanceID
	}
	if req.RackID != nil {
		upd.rackID = *req.RackID
	}
	if req.RebalanceTimeoutMs != -1 {
		upd.rebalanceTimeoutMs = req.RebalanceTimeoutMs
	}
	if req.ServerAssignor != nil {
		upd.serverAssignor = *req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		sort.Strings(names)
		upd.subscribedNames = slices.Compact(names)
	}
	if req.SubscribedTopicRegex != nil {
		upd.regex = *req.SubscribedTopicRegex
	}
	upd.clientID, upd.clientHost = req.ClientID, req.ClientHost
	upd.classic = nil // the member speaks the consumer protocol now
	subscriptionChanged := old == nil || !slices.Equal(old.subscribedNames, upd.subscribedNames) || old.regex != upd.regex
	if old == nil || !sameMemberMeta(old, upd) {
		c.emit(record{typ: recCGMemberMetadata, group: req.Group, cg: &cgRecord{member: memberID, meta: memberMeta(upd)}})
	}
	m := cg.members[memberID]
	if m.assigned == nil {
		m.assigned, m.pending = assignment{}, assignment{}
	}

	// 2. The group epoch, bumped by a subscription or metadata change.
	c.refreshMetadata(now, req.Group, cg, im, subscriptionChanged)

	// 3. The target assignment at the group epoch.
	c.maybeComputeTarget(req.Group, cg, im)

	// 4. Reconcile the member towards its target.
	c.reconcile(now, req.Group, cg, m, owned)
	m.sessionDeadline = now.Add(c.sessionTimeout(req))

	res := ConsumerHeartbeatResult{MemberID: memberID, MemberEpoch: m.epoch, HeartbeatIntervalMs: c.heartbeatInterval(req)}
	full := joining || (req.RebalanceTimeoutMs != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Owned != nil)
	if full || !prevAssigned.equal(m.assigned) {
		res.HasAssignment = true
		for _, t := range m.assigned.topics() {
			res.Assignment = append(res.Assignment, OwnedTopic{ID: t, Partitions: slices.Clone(m.assigned[t])})
		}
	}
	return res
}

// replaceCGMember is Kafka's replaceMember: a static member's new member
// id takes the instance's assignment (epoch 0) and its target; the old id
// is removed.
func (c *groupCore) replaceCGMember(group string, cg *consumerGroup, replaced *cgMember, memberID string) *cgMember {
	nm := *replaced
	nm.id, nm.epoch, nm.prevEpoch = memberID, 0, 0
	nm.assigned, nm.pending = replaced.assigned.clone(), replaced.pending.clone()
	target := cg.target[replaced.id]
	c.removeCGMemberRecords(group, replaced.id)
	for _, r := range cgMemberRecords(group, &nm, target) {
		c.emit(r)
	}
	return cg.members[memberID]
}

// checkMemberEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid: an
// epoch ahead of the member's is fenced; one behind is accepted only when
// it is the previous epoch and the member owns a subset of what it is
// assigned (the response with the new epoch was lost).
func checkMemberEpoch(m *cgMember, epoch int32, owned assignment) error {
	switch {
	case epoch > m.epoch:
		return fmt.Errorf("%w: The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", ErrFencedMemberEpoch, epoch, m.epoch)
	case epoch < m.epoch:
		if epoch != m.prevEpoch || !isSubset(owned, m.assigned) {
			return fmt.Errorf("%w: The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", ErrFencedMemberEpoch, epoch, m.epoch)
		}
	}
	return nil
}

func isSubset(owned, of assignment) bool {
	if owned == nil {
		return false
	}
	for t, ps := range owned {
		for _, p := range ps {
			if !of.has(t, p) {
				return false
			}
		}
	}
	return true
}

func sameMemberMeta(a, b *cgMember) bool {
	return a.instanceID == b.instanceID && a.rackID == b.rackID && a.clientID == b.clientID && a.clientHost == b.clientHost &&
		slices.Equal(a.subscribedNames, b.subscribedNames) && a.regex == b.regex &&
		a.rebalanceTimeoutMs == b.rebalanceTimeoutMs && a.serverAssignor == b.serverAssignor && a.classic.equal(b.classic)
}

func classicGroupIsEmpty(g *group) bool {
	return len(g.members) == 0 && len(g.pendingMembers) == 0 && (g.state == StateEmpty || g.state == StateDead)
}

// refreshMetadata bumps the group epoch when the subscription changed or
// the subscribed topics' metadata did (a topic created that a name or
// regex subscribes to, deleted, or grown), as Kafka does on a heartbeat
// after its metadata image changed.
func (c *groupCore) refreshMetadata(now time.Time, id string, cg *consumerGroup, im *TopicImage, subscriptionChanged bool) {
	if !subscriptionChanged && cg.metaGen == im.Gen && cg.metaGen != 0 {
		return
	}
	cg.metaGen = im.Gen
	c.refreshRegexes(now, id, cg, im)
	hash := metadataHashOf(cg.subscribedTopicNames(im), im)
	if subscriptionChanged || hash != cg.metadataHash {
		c.emit(record{typ: recCGMetadata, group: id, cg: &cgRecord{epoch: cg.epoch + 1, metadataHash: hash}})
	}
}

// maybeComputeTarget computes the target assignment at the group epoch
// when it is behind, writing the members' targets that changed and the
// new assignment epoch.
func (c *groupCore) maybeComputeTarget(id string, cg *consumerGroup, im *TopicImage) {
	if cg.epoch <= cg.assignmentEpoch {
		return
	}
	target := c.assign(cg, im)
	for _, m := range cg.sortedMembers() {
		t := target[m.id]
		if cur, ok := cg.target[m.id]; !ok || !cur.equal(t) {
			c.emit(record{typ: recCGTargetMember, group: id, cg: &cgRecord{member: m.id, partitions: t}})
		}
	}
	c.emit(record{typ: recCGTargetMetadata, group: id, cg: &cgRecord{assignmentEpoch: cg.epoch}})
}

// reconcile is Kafka's maybeReconcile with its CurrentAssignmentBuilder:
// one step of m towards its target, written when it changes anything.
func (c *groupCore) reconcile(now time.Time, id string, cg *consumerGroup, m *cgMember, owned assignment) {
	if m.epoch == staticLeaveEpoch || m.reconciledTo(cg.assignmentEpoch) {
		return
	}
	target := cg.target[m.id]
	var next *cgMember
	switch m.state {
	case MemberStable:
		if m.epoch != cg.assignmentEpoch {
			next = c.nextAssignment(cg, m, m.epoch, target, owned)
		}
	case MemberUnrevokedPartitions:
		if !ownsAny(owned, m.pending) {
			next = c.nextAssignment(cg, m, m.epoch, target, owned)
		}
	case MemberUnreleasedPartitions:
		next = c.nextAssignment(cg, m, m.epoch, target, owned)
	default:
		next = c.nextAssignment(cg, m, cg.assignmentEpoch, target, owned)
	}
	if next == nil || (next.epoch == m.epoch && next.prevEpoch == m.prevEpoch && next.state == m.state &&
		next.assigned.equal(m.assigned) && next.pending.equal(m.pending)) {
		return
	}
	c.emit(currentAssignmentRecord(id, next))
	if m.state == MemberUnrevokedPartitions {
		m.rebalanceDeadline = now.Add(time.Duration(m.rebalanceTimeoutMs) * time.Millisecond)
		m.rebalanceEpoch = m.epoch
	} else {
		m.rebalanceDeadline = time.Time{}
	}
}

// ownsAny: owned (nil: not reported, so still owned) holds a partition of
// revoking.
func ownsAny(owned, revoking assignment) bool {
	if owned == nil {
		return true
	}
	for t, ps := range owned {
		for _, p := range ps {
			if revoking.has(t, p) {
				return true
			}
		}
	}
	return false
}

// nextAssignment is CurrentAssignmentBuilder.computeNextAssignment: keep
// what is both assigned and targeted, revoke the rest (the member stays at
// its epoch until it has), and add targeted partitions only when no other
// member holds them.
func (c *groupCore) nextAssignment(cg *consumerGroup, m *cgMember, epoch int32, target, owned assignment) *cgMember {
	keep, revoke, add := assignment{}, assignment{}, assignment{}
	unreleased := false
	for _, t := range unionTopics(target, m.assigned) {
		for _, p := range m.assigned[t] {
			if target.has(t, p) {
				keep.add(t, p)
			} else {
				revoke.add(t, p)
			}
		}
		for _, p := range target[t] {
			if keep.has(t, p) {
				continue
			}
			if cg.partitionEpoch(t, p) != -1 && !c.knobs.hooks.AssignBeforeRevoke {
				unreleased = true
				continue
			}
			add.add(t, p)
		}
	}
	next := &cgMember{id: m.id}
	if len(revoke) > 0 && ownsAny(owned, revoke) {
		next.state, next.assigned, next.pending = MemberUnrevokedPartitions, keep, revoke
		next.epoch, next.prevEpoch = epoch, m.epoch // Kafka's updateMemberEpoch
		return next
	}
	for t, ps := range add {
		for _, p := range ps {
			keep.add(t, p)
		}
	}
	next.state = MemberStable
	if unreleased {
		next.state = MemberUnreleasedPartitions
	}
	next.assigned, next.pending = keep, assignment{}
	next.epoch, next.prevEpoch = cg.assignmentEpoch, m.epoch
	return next
}

func unionTopics(a, b assignment) []TopicID {
	u := assignment{}
	for t := range a {
		u[t] = nil
	}
	for t := range b {
		u[t] = nil
	}
	return u.topics()
}

// removeCGMemberRecords writes Kafka's removeMember tombstones.
func (c *groupCore) removeCGMemberRecords(group, member string) {
	c.emit(record{typ: recCGCurrentMember, group: group, cg: &cgRecord{member: member, tombstone: true}})
	c.emit(record{typ: recCGTargetMember, group: group, cg: &cgRecord{member: member, tombstone: true}})
	c.emit(record{typ: recCGMemberMetadata, group: group, cg: &cgRecord{member: member, tombstone: true}})
}

// fenceCGMember removes m and bumps the group epoch (Kafka's
// consumerGroupFenceMember): leaving, session, rebalance, join or sync
// timeout. When m is the last member speaking the consumer protocol and
// classic members remain, the group becomes a classic group instead
// (Kafka's online downgrade, policy permitting).
func (c *groupCore) fenceCGMember(now time.Time, id string, cg *consumerGroup, m *cgMember, im *TopicImage) {
	if c.canDowngrade(cg, m) {
		c.convertToClassicGroup(now, id, m.id, im, true)
		return
	}
	c.removeCGMemberRecords(id, m.id)
	c.dropUnusedRegexes(id, cg)
	hash := metadataHashOf(cg.subscribedTopicNames(im), im)
	cg.metaGen = im.Gen
	c.emit(record{typ: recCGMetadata, group: id, cg: &cgRecord{epoch: cg.epoch + 1, metadataHash: hash}})
}

// consumerLeave is Kafka's consumerGroupLeave: epoch -1 removes the
// member; -2 (a static member that will come back) keeps it and its
// assignment at epoch -2 until its session ends or its instance rejoins.
func (c *groupCore) consumerLeave(now time.Time, im *TopicImage, req ConsumerHeartbeatRequest) ConsumerHeartbeatResult {
	res := ConsumerHeartbeatResult{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	g := c.groups[req.Group]
	if g == nil || g.cg == nil {
		res.Err = fmt.Errorf("%w: Consumer group %s not found.", ErrGroupIDNotFound, req.Group)
		return res
	}
	cg := g.cg
	var m *cgMember
	if req.InstanceID == nil {
		if m = cg.members[req.MemberID]; m == nil {
			res.Err = fmt.Errorf("%w: Member %s is not a member of group %s.", ErrUnknownMemberID, req.MemberID, req.Group)
			return res
		}
	} else {
		m = cg.members[cg.static[*req.InstanceID]]
		switch {
		case m == nil:
			res.Err = fmt.Errorf("%w: Instance id %s is unknown.", ErrUnknownMemberID, *req.InstanceID)
			return res
		case m.id != req.MemberID:
			res.Err = fmt.Errorf("%w: Static member %s with instance id %s was fenced by member %s.", ErrFencedInstanceID, req.MemberID, *req.InstanceID, m.id)
			return res
		}
		if req.MemberEpoch == staticLeaveEpoch {
			next := *m
			next.epoch, next.pending = staticLeaveEpoch, assignment{}
			c.emit(currentAssignmentRecord(req.Group, &next))
			m.rebalanceDeadline = time.Time{}
			return res
		}
	}
	c.fenceCGMember(now, req.Group, cg, m, im)
	return res
}

// tickConsumerGroup runs g's timers: a member not heard from for its
// session timeout, or still holding partitions to revoke at its
// rebalance timeout, is fenced; a changed topic image is checked against
// the group's metadata (a new topic matching a regex bumps the epoch).
func (c *groupCore) tickConsumerGroup(now time.Time, id string, g *group, im *TopicImage) {
	cg := g.cg
	for _, m := range cg.sortedMembers() {
		var reason string
		switch {
		case !m.sessionDeadline.IsZero() && !now.Before(m.sessionDeadline):
			reason = "session_timeout"
		case !m.rebalanceDeadline.IsZero() && !now.Before(m.rebalanceDeadline) &&
			m.state == MemberUnrevokedPartitions && m.epoch == m.rebalanceEpoch:
			reason = "rebalance_timeout"
		case !m.joinDeadline.IsZero() && !now.Before(m.joinDeadline): // a classic member did not rejoin
			reason = "join_timeout"
		case !m.syncDeadline.IsZero() && !now.Before(m.syncDeadline): // nor sync
			reason = "sync_timeout"
		default:
			continue
		}
		if g.cg != cg || cg.members[m.id] != m {
			continue // the group became classic, or m went with an earlier member
		}
		if c.fenced == nil {
			c.fenced = map[string]uint64{}
		}
		c.fenced[reason]++
		c.fenceCGMember(now, id, cg, m, im)
	}
	if g.cg != cg {
		return
	}
	if len(cg.members) > 0 && cg.metaGen != im.Gen {
		c.refreshMetadata(now, id, cg, im, false)
	}
	if len(cg.members) > 0 {
		c.maybeComputeTarget(id, cg, im)
	}
}
