package coordinator

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Online migration between the classic and the consumer group protocols,
// as Kafka 4's group coordinator does it (GroupMetadataManager's
// classicGroup*ToConsumerGroup, convertToConsumerGroup,
// convertToClassicGroup; group.consumer.migration.policy):
//
//   - A classic member (JoinGroup with protocol type "consumer") joining a
//     consumer group that has members is served by the consumer group: its
//     subscription is read from its JoinGroup metadata (ConsumerProtocol),
//     the coordinator computes its target and reconciles it as it does a
//     ConsumerGroupHeartbeat's member, and SyncGroup answers the member's
//     assigned partitions encoded as a ConsumerProtocol assignment. The
//     JoinGroup generation is the member epoch. A Heartbeat answers
//     REBALANCE_IN_PROGRESS when the member must rejoin: its epoch is
//     behind the group epoch, it has partitions to revoke, or partitions
//     it waited for are free. Its ClassicMemberMetadata (session timeout,
//     protocols) is persisted in its ConsumerGroupMemberMetadata record.
//   - Upgrade: a ConsumerGroupHeartbeat joining a classic group with
//     members converts it into a consumer group, when the policy allows
//     upgrades and the group's protocol type is "consumer": each classic
//     member becomes a member at epoch = the generation, assigned what its
//     last SyncGroup gave it.
//   - Downgrade: when the last member speaking the consumer protocol
//     leaves (or is fenced) and classic members remain, the group becomes
//     a classic group at generation = the group epoch, each member given
//     its target assignment, and a rebalance starts, when the policy
//     allows downgrades. When that member was a static member replaced by
//     a classic member of its instance (JoinGroup with an unknown member
//     id), the group becomes a Stable classic group, without a rebalance,
//     the new member holding its predecessor's target.
//
// Deviations (docs/CONSUMER_GROUPS.md): the classic group a consumer
// group was converted from is cleared by a GroupMetadata record with no
// members rather than Kafka's tombstone (a tombstone in the group log
// drops the offsets too); at an upgrade, partitions a classic member's
// last JoinGroup said it owned and that no member is assigned are held as
// pending revocation until it rejoins (Kafka starts from the assignments
// alone, so a cooperative member's withheld partitions could be given
// away while it still consumes them); a malformed embedded
// ConsumerProtocol subscription is INCONSISTENT_GROUP_PROTOCOL (Kafka:
// UNKNOWN_SERVER_ERROR); group.max.size does not bound a downgrade.

const consumerProtocolType = "consumer"

// migrationPolicy is group.consumer.migration.policy, lower case;
// "" is Kafka 4's default, bidirectional.
func (cfg GroupConfig) migrationPolicy() string {
	p := strings.ToLower(cfg.ConsumerMigrationPolicy)
	if p == "" {
		return "bidirectional"
	}
	return p
}

func (cfg GroupConfig) upgradeEnabled() bool {
	p := cfg.migrationPolicy()
	return p == "bidirectional" || p == "upgrade"
}

func (cfg GroupConfig) downgradeEnabled() bool {
	p := cfg.migrationPolicy()
	return p == "bidirectional" || p == "downgrade"
}

// canUpgrade is Kafka's validateOnlineUpgrade (its size check is the
// caller's).
func (c *groupCore) canUpgrade(g *group) bool {
	return c.cfg.upgradeEnabled() && g.protocolType == consumerProtocolType
}

// canDowngrade is Kafka's validateOnlineDowngradeWithFencedMember: leaving
// is the last member speaking the consumer protocol, others remain.
func (c *groupCore) canDowngrade(cg *consumerGroup, leaving *cgMember) bool {
	if leaving.classic != nil || len(cg.members) <= 1 || !c.cfg.downgradeEnabled() {
		return false
	}
	for _, m := range cg.members {
		if m != leaving && m.classic == nil {
			return false
		}
	}
	return true
}

// decodeSubscription reads a ConsumerProtocol subscription (JoinGroup
// protocol metadata).
func decodeSubscription(b []byte) (*kmsg.ConsumerMemberMetadata, error) {
	var s kmsg.ConsumerMemberMetadata
	if err := s.ReadFrom(b); err != nil {
		return nil, err
	}
	return &s, nil
}

// protocolVersion is the ConsumerProtocol version an assignment is
// encoded at for this subscription (Kafka's deserializeVersion, within
// the versions it writes).
func protocolVersion(meta []byte) int16 {
	if len(meta) < 2 {
		return 0
	}
	return min(max(int16(meta[0])<<8|int16(meta[1]), 0), 3)
}

// encodeAssignment is a ConsumerProtocol assignment of a's partitions
// (topics the image no longer has are left out).
func encodeAssignment(a assignment, im *TopicImage, version int16) []byte {
	out := kmsg.NewConsumerMemberAssignment()
	out.Version = version
	for _, t := range a.topics() {
		name, ok := im.ByID[t]
		if !ok {
			continue
		}
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = name, slices.Clone(a[t])
		out.Topics = append(out.Topics, at)
	}
	sort.Slice(out.Topics, func(i, j int) bool { return out.Topics[i].Topic < out.Topics[j].Topic })
	return out.AppendTo(nil)
}

// decodeAssignment reads a ConsumerProtocol assignment into topic ids
// (topics the image does not have are left out); an empty one is none.
func decodeAssignment(b []byte, im *TopicImage) (assignment, error) {
	a := assignment{}
	if len(b) == 0 {
		return a, nil
	}
	var in kmsg.ConsumerMemberAssignment
	if err := in.ReadFrom(b); err != nil {
		return nil, err
	}
	for _, t := range in.Topics {
		if info, ok := im.ByName[t.Topic]; ok {
			for _, p := range t.Partitions {
				if p >= 0 && p < info.Partitions {
					a[info.ID] = append(a[info.ID], p)
				}
			}
		}
	}
	return a.normalize(), nil
}

// ownedFromSubscription is the subscription's owned partitions (v1+) as
// an assignment; never nil (a classic member reports what it owns).
func ownedFromSubscription(s *kmsg.ConsumerMemberMetadata, im *TopicImage) assignment {
	a := assignment{}
	for _, t := range s.OwnedPartitions {
		if info, ok := im.ByName[t.Topic]; ok {
			a[info.ID] = append(a[info.ID], t.Partitions...)
		}
	}
	return a.normalize()
}

// supportsClassicProtocols is Kafka's ConsumerGroup.supportsClassicProtocols:
// protocol type "consumer" and a protocol every classic member supports.
func supportsClassicProtocols(cg *consumerGroup, protocolType string, protocols []Protocol) bool {
	if protocolType != consumerProtocolType || len(protocols) == 0 {
		return false
	}
	for _, p := range protocols {
		all := true
		for _, m := range cg.members {
			if m.classic != nil && !slices.ContainsFunc(m.classic.protocols, func(q Protocol) bool { return q.Name == p.Name }) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// validateCGMember is Kafka's validateConsumerGroupMember, for the classic
// requests to a consumer group.
func validateCGMember(cg *consumerGroup, group, memberID, instanceID string) (*cgMember, error) {
	if instanceID == "" {
		if m := cg.members[memberID]; m != nil {
			return m, nil
		}
		return nil, fmt.Errorf("%w: Member %s is not a member of group %s.", ErrUnknownMemberID, memberID, group)
	}
	m := cg.members[cg.static[instanceID]]
	switch {
	case m == nil:
		return nil, fmt.Errorf("%w: Member with instance id %s is not a member of group %s.", ErrUnknownMemberID, instanceID, group)
	case m.id != memberID:
		return nil, fmt.Errorf("%w: Static member %s with instance id %s was fenced by member %s.", ErrFencedInstanceID, memberID, instanceID, m.id)
	}
	return m, nil
}

func classicOnly(m *cgMember) error {
	if m.classic == nil || len(m.classic.protocols) == 0 { // none: only a damaged record
		return fmt.Errorf("%w: Member %s does not use the classic protocol.", ErrUnknownMemberID, m.id)
	}
	return nil
}

// classicJoinToConsumerGroup is Kafka's classicGroupJoinToConsumerGroup:
// answered at once, with the member's epoch as the generation and no
// leader (the coordinator assigns).
func (c *groupCore) classicJoinToConsumerGroup(now time.Time, g *group, req JoinRequest, w Waiter) {
	cg, im := g.cg, c.image
	fail := func(err error) { c.replyJoin(w, joinError(req.MemberID, err)) }
	memberID := req.MemberID
	unknown := memberID == ""
	if unknown {
		memberID = newUUIDString()
	}
	if len(cg.members) >= c.cfg.consumerMaxSize() && (unknown || cg.members[memberID] == nil) {
		fail(fmt.Errorf("%w: The consumer group has reached its maximum capacity of %d members.", ErrGroupMaxSize, c.cfg.consumerMaxSize()))
		return
	}
	if !supportsClassicProtocols(cg, req.ProtocolType, req.Protocols) {
		fail(fmt.Errorf("%w: Member %s's protocols are not supported.", ErrInconsistentGroupProtocol, memberID))
		return
	}
	if req.RequireKnownMemberID && unknown && req.InstanceID == "" {
		c.replyJoin(w, joinError(memberID, ErrMemberIDRequired))
		return
	}
	sub, err := decodeSubscription(req.Protocols[0].Metadata)
	if err != nil {
		fail(fmt.Errorf("%w: malformed embedded consumer protocol subscription: %v", ErrInconsistentGroupProtocol, err))
		return
	}

	// The member: existing, new, or a static member replacing its
	// instance's previous member (whatever protocol that one spoke).
	var old *cgMember
	replacedConsumer := false // a consumer-protocol static member was replaced
	if req.InstanceID == "" {
		old = cg.members[memberID]
	} else {
		existing := cg.members[cg.static[req.InstanceID]]
		switch {
		case unknown && existing != nil:
			replacedConsumer = existing.classic == nil
			old = c.replaceCGMember(g.id, cg, existing, memberID)
		case unknown:
		case existing == nil:
			fail(fmt.Errorf("%w: Instance id %s is unknown.", ErrUnknownMemberID, req.InstanceID))
			return
		case existing.id != memberID:
			fail(fmt.Errorf("%w: Static member %s with instance id %s was fenced by member %s.", ErrFencedInstanceID, memberID, req.InstanceID, existing.id))
			return
		default:
			old = existing
		}
	}

	upd := &cgMember{id: memberID, state: MemberStable, assigned: assignment{}, pending: assignment{}}
	if old != nil {
		cp := *old
		upd = &cp
	}
	if req.InstanceID != "" {
		upd.instanceID = req.InstanceID
	}
	if sub.Rack != nil && *sub.Rack != "" {
		upd.rackID = *sub.Rack
	}
	upd.rebalanceTimeoutMs = int32(req.RebalanceTimeout / time.Millisecond)
	names := slices.Clone(sub.Topics)
	sort.Strings(names)
	upd.subscribedNames = slices.Compact(names)
	upd.clientID, upd.clientHost = req.ClientID, req.ClientHost
	upd.classic = &classicMeta{sessionTimeoutMs: int32(req.SessionTimeout / time.Millisecond), protocols: slices.Clone(req.Protocols)}
	subscriptionChanged := old == nil || !slices.Equal(old.subscribedNames, upd.subscribedNames) || old.regex != upd.regex
	if old == nil || !sameMemberMeta(old, upd) {
		c.emit(record{typ: recCGMemberMetadata, group: g.id, cg: &cgRecord{member: memberID, meta: memberMeta(upd)}})
	}
	m := cg.members[memberID]
	if m.assigned == nil {
		m.assigned, m.pending = assignment{}, assignment{}
	}
	c.refreshMetadata(now, g.id, cg, im, subscriptionChanged)
	c.maybeComputeTarget(g.id, cg, im)
	c.reconcile(now, g.id, cg, m, ownedFromSubscription(sub, im))
	m.sessionDeadline = now.Add(req.SessionTimeout)
	m.joinDeadline = time.Time{}
	m.syncDeadline = now.Add(req.RebalanceTimeout)
	res := &JoinResult{MemberID: memberID, Generation: m.epoch, ProtocolType: consumerProtocolType, Protocol: req.Protocols[0].Name}
	if replacedConsumer && c.cfg.downgradeEnabled() && allClassic(cg) {
		// Kafka's validateOnlineDowngradeWithReplacedMemberId: the last
		// consumer-protocol member was a static member this classic
		// member replaced; the group becomes classic, Stable, each member
		// holding its target (the new one its predecessor's).
		c.convertToClassicGroup(now, g.id, "", im, false)
	}
	c.replyJoin(w, res)
}

// classicSyncToConsumerGroup is Kafka's classicGroupSyncToConsumerGroup.
func (c *groupCore) classicSyncToConsumerGroup(now time.Time, g *group, req SyncRequest, w Waiter) {
	cg := g.cg
	m, err := validateCGMember(cg, g.id, req.MemberID, req.InstanceID)
	if err == nil {
		err = classicOnly(m)
	}
	if err != nil {
		c.replySync(w, &SyncResult{Err: err})
		return
	}
	name := m.classic.protocols[0].Name
	switch {
	case req.Generation != m.epoch:
		err = fmt.Errorf("%w: The request generation id %d is not equal to the member epoch %d of member %s.", ErrIllegalGeneration, req.Generation, m.epoch, m.id)
	case req.ProtocolType != nil && *req.ProtocolType != consumerProtocolType,
		req.Protocol != nil && *req.Protocol != name:
		err = fmt.Errorf("%w: the protocol type or name is not the one the join response gave", ErrInconsistentGroupProtocol)
	case cg.epoch > m.epoch && m.state != MemberUnrevokedPartitions:
		c.scheduleClassicJoin(now, m)
		err = fmt.Errorf("%w: A new rebalance is triggered in group %s and member %s should rejoin to catch up.", ErrRebalanceInProgress, g.id, m.id)
	}
	if err != nil {
		c.replySync(w, &SyncResult{Err: err})
		return
	}
	m.syncDeadline = time.Time{}
	m.sessionDeadline = now.Add(time.Duration(m.classic.sessionTimeoutMs) * time.Millisecond)
	c.replySync(w, &SyncResult{ProtocolType: consumerProtocolType, Protocol: name,
		Assignment: encodeAssignment(m.assigned, c.image, protocolVersion(m.classic.protocols[0].Metadata))})
}

// scheduleClassicJoin is Kafka's scheduleConsumerGroupJoinTimeoutIfAbsent:
// a classic member told to rejoin is fenced if it has not within its
// rebalance timeout.
func (c *groupCore) scheduleClassicJoin(now time.Time, m *cgMember) {
	if m.joinDeadline.IsZero() {
		m.joinDeadline = now.Add(time.Duration(m.rebalanceTimeoutMs) * time.Millisecond)
	}
}

// classicHeartbeatToConsumerGroup is Kafka's
// classicGroupHeartbeatToConsumerGroup.
func (c *groupCore) classicHeartbeatToConsumerGroup(now time.Time, g *group, memberID, instanceID string, generation int32) error {
	cg := g.cg
	m, err := validateCGMember(cg, g.id, memberID, instanceID)
	if err == nil {
		err = classicOnly(m)
	}
	if err != nil {
		return err
	}
	if generation != m.epoch {
		return fmt.Errorf("%w: The request generation id %d is not equal to the member epoch %d of member %s.", ErrIllegalGeneration, generation, m.epoch, m.id)
	}
	m.sessionDeadline = now.Add(time.Duration(m.classic.sessionTimeoutMs) * time.Millisecond)
	c.maybeComputeTarget(g.id, cg, c.image)
	if m.epoch < cg.epoch || m.state == MemberUnrevokedPartitions ||
		(m.state == MemberUnreleasedPartitions && !cg.waitingOnUnreleased(m)) {
		c.scheduleClassicJoin(now, m)
		return ErrRebalanceInProgress
	}
	return nil
}

// waitingOnUnreleased is Kafka's waitingOnUnreleasedPartition: a partition
// of m's target that m does not have is still held by another member.
func (cg *consumerGroup) waitingOnUnreleased(m *cgMember) bool {
	if m.state != MemberUnreleasedPartitions {
		return false
	}
	for t, ps := range cg.target[m.id] {
		for _, p := range ps {
			if !m.assigned.has(t, p) && cg.partitionEpoch(t, p) != -1 {
				return true
			}
		}
	}
	return false
}

// classicLeaveToConsumerGroup is Kafka's classicGroupLeaveToConsumerGroup:
// each classic member named leaves; the group epoch is bumped once. It
// never downgrades the group (a classic member leaving leaves the
// consumer-protocol members).
func (c *groupCore) classicLeaveToConsumerGroup(g *group, leaving []LeaveMember) []error {
	cg := g.cg
	errs := make([]error, len(leaving))
	removed := false
	for i, l := range leaving {
		var m *cgMember
		if l.InstanceID == "" {
			if m = cg.members[l.MemberID]; m == nil {
				errs[i] = fmt.Errorf("%w: Member %s is not a member of group %s.", ErrUnknownMemberID, l.MemberID, g.id)
				continue
			}
		} else {
			m = cg.members[cg.static[l.InstanceID]]
			switch {
			case m == nil:
				errs[i] = fmt.Errorf("%w: Instance id %s is unknown.", ErrUnknownMemberID, l.InstanceID)
				continue
			case l.MemberID != "" && m.id != l.MemberID:
				errs[i] = fmt.Errorf("%w: Static member %s with instance id %s was fenced by member %s.", ErrFencedInstanceID, l.MemberID, l.InstanceID, m.id)
				continue
			}
		}
		if errs[i] = classicOnly(m); errs[i] != nil {
			continue
		}
		c.removeCGMemberRecords(g.id, m.id)
		removed = true
	}
	if removed {
		c.dropUnusedRegexes(g.id, cg)
		hash := metadataHashOf(cg.subscribedTopicNames(c.image), c.image)
		cg.metaGen = c.image.Gen
		c.emit(record{typ: recCGMetadata, group: g.id, cg: &cgRecord{epoch: cg.epoch + 1, metadataHash: hash}})
	}
	return errs
}

// convertToConsumerGroup is Kafka's convertToConsumerGroup with
// ConsumerGroup.fromClassicGroup: the classic group's members become
// consumer group members at epoch = its generation, each assigned what
// its last SyncGroup gave it (its target too); waiting JoinGroups and
// SyncGroups are answered REBALANCE_IN_PROGRESS. Nothing is changed when
// a member's embedded protocol does not decode (GROUP_ID_NOT_FOUND).
func (c *groupCore) convertToConsumerGroup(now time.Time, g *group, im *TopicImage) error {
	type conv struct {
		m     *cgMember
		owned assignment // what its last JoinGroup said it owned
	}
	var ms []conv
	for _, cm := range g.sortedMembers() {
		meta := cm.metadataFor(g.protocol)
		if meta == nil && len(cm.protocols) > 0 {
			meta = cm.protocols[0].Metadata
		}
		sub, err := decodeSubscription(meta)
		var a assignment
		if err == nil {
			a, err = decodeAssignment(cm.assignment, im)
		}
		if err != nil {
			return fmt.Errorf("%w: Cannot upgrade the classic group %s to consumer group because the embedded consumer protocol is malformed.", ErrGroupIDNotFound, g.id)
		}
		m := &cgMember{id: cm.id, instanceID: cm.instanceID, clientID: cm.clientID, clientHost: cm.clientHost,
			rebalanceTimeoutMs: int32(cm.rebalanceTimeout / time.Millisecond),
			epoch:              g.generation, prevEpoch: g.generation, state: MemberStable, assigned: a, pending: assignment{},
			classic: &classicMeta{sessionTimeoutMs: int32(cm.sessionTimeout / time.Millisecond), protocols: slices.Clone(cm.protocols)},
		}
		if sub.Rack != nil && *sub.Rack != "" {
			m.rackID = *sub.Rack
		}
		names := slices.Clone(sub.Topics)
		sort.Strings(names)
		m.subscribedNames = slices.Compact(names)
		ms = append(ms, conv{m, ownedFromSubscription(sub, im)})
	}
	// Two members claiming one partition (a classic group mid-rebalance):
	// the later keeps none of it, so a partition has one owner.
	seen := map[TopicID]map[int32]bool{}
	for _, x := range ms {
		for t, ps := range x.m.assigned {
			kept := ps[:0:0]
			for _, p := range ps {
				if seen[t] == nil {
					seen[t] = map[int32]bool{}
				}
				if !seen[t][p] {
					seen[t][p] = true
					kept = append(kept, p)
				}
			}
			x.m.assigned[t] = kept
		}
		x.m.assigned.normalize()
	}
	// A cooperative member may still own partitions its last assignment
	// withheld (it revokes them, then rejoins; the group can be converted
	// in between). Deviation, stricter than Kafka's fromClassicGroup,
	// which starts from the assignments alone: such a partition, if no
	// other member is assigned it, is held as pending revocation, so no
	// member is given it before this one's next JoinGroup shows it gone.
	for _, x := range ms {
		for t, ps := range x.owned {
			for _, p := range ps {
				if !seen[t][p] {
					if seen[t] == nil {
						seen[t] = map[int32]bool{}
					}
					seen[t][p] = true
					x.m.pending.add(t, p)
					x.m.state = MemberUnrevokedPartitions
				}
			}
		}
	}

	for _, m := range g.sortedMembers() {
		c.replyJoin(m.joinWaiter, joinError(m.id, ErrRebalanceInProgress))
		c.replySync(m.syncWaiter, &SyncResult{Err: ErrRebalanceInProgress})
	}
	// The classic membership is cleared (Kafka: a GroupMetadata
	// tombstone; here a record with no members, which keeps the offsets).
	g.members, g.static, g.pendingMembers, g.pendingSync = map[string]*member{}, map[string]string{}, map[string]time.Time{}, map[string]bool{}
	g.leader, g.protocol = "", ""
	g.initialDelayUntil, g.newMemberAdded, g.rebalanceDeadline, g.syncDeadline = time.Time{}, false, time.Time{}, time.Time{}
	g.transition(StateEmpty, now)
	c.emit(record{typ: recGroupMetadata, group: g.id, meta: groupMeta(g)})

	// Kafka's createConsumerGroupRecords, in its order.
	names := map[string]bool{}
	for _, x := range ms {
		c.emit(record{typ: recCGMemberMetadata, group: g.id, cg: &cgRecord{member: x.m.id, meta: memberMeta(x.m)}})
		for _, n := range x.m.subscribedNames {
			if _, ok := im.ByName[n]; ok {
				names[n] = true
			}
		}
	}
	c.emit(record{typ: recCGMetadata, group: g.id, cg: &cgRecord{epoch: g.generation, metadataHash: metadataHashOf(names, im)}})
	for _, x := range ms {
		c.emit(record{typ: recCGTargetMember, group: g.id, cg: &cgRecord{member: x.m.id, partitions: x.m.assigned.clone()}})
	}
	c.emit(record{typ: recCGTargetMetadata, group: g.id, cg: &cgRecord{assignmentEpoch: g.generation}})
	for _, x := range ms {
		c.emit(currentAssignmentRecord(g.id, x.m))
		live := g.cg.members[x.m.id]
		live.sessionDeadline = now.Add(time.Duration(x.m.classic.sessionTimeoutMs) * time.Millisecond)
	}
	g.cg.metaGen = im.Gen
	return nil
}

// convertToClassicGroup is Kafka's convertToClassicGroup with
// ClassicGroup.fromConsumerGroup: the consumer group's records are
// tombstoned, its members but leaving become a classic group at
// generation = the group epoch, each given its target assignment, and a
// rebalance starts (the members rejoin on their next heartbeat).
func (c *groupCore) convertToClassicGroup(now time.Time, id, leaving string, im *TopicImage, rebalance bool) {
	g := c.groups[id]
	cg := g.cg
	members := cg.sortedMembers()
	targets := map[string]assignment{}
	for _, m := range members {
		targets[m.id] = cg.target[m.id].clone()
	}
	epoch := cg.epoch
	c.dropRegexes(id, cg, func(string) bool { return true })
	// Kafka's createGroupTombstoneRecords, in its order.
	for _, m := range members {
		c.emit(record{typ: recCGCurrentMember, group: id, cg: &cgRecord{member: m.id, tombstone: true}})
	}
	for _, m := range members {
		c.emit(record{typ: recCGTargetMember, group: id, cg: &cgRecord{member: m.id, tombstone: true}})
	}
	c.emit(record{typ: recCGTargetMetadata, group: id, cg: &cgRecord{tombstone: true}})
	for _, m := range members {
		c.emit(record{typ: recCGMemberMetadata, group: id, cg: &cgRecord{member: m.id, tombstone: true}})
	}
	c.emit(record{typ: recCGMetadata, group: id, cg: &cgRecord{tombstone: true}})

	g.members, g.static, g.pendingMembers, g.pendingSync = map[string]*member{}, map[string]string{}, map[string]time.Time{}, map[string]bool{}
	g.generation, g.protocolType, g.leader = epoch, consumerProtocolType, ""
	for _, m := range members {
		if m.id == leaving {
			continue
		}
		c.joinSeq++
		cm := &member{id: m.id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			sessionTimeout:   time.Duration(m.classic.sessionTimeoutMs) * time.Millisecond,
			rebalanceTimeout: time.Duration(m.rebalanceTimeoutMs) * time.Millisecond,
			protocolType:     consumerProtocolType, protocols: slices.Clone(m.classic.protocols),
			lastHeartbeat: now, joinedSeq: c.joinSeq}
		g.members[cm.id] = cm
		if cm.instanceID != "" {
			g.static[cm.instanceID] = cm.id
		}
		if g.leader == "" {
			g.leader = cm.id
		}
	}
	g.protocol = g.selectProtocol()
	for _, cm := range g.members {
		meta := cm.metadataFor(g.protocol)
		cm.assignment = encodeAssignment(targets[cm.id], im, protocolVersion(meta))
	}
	g.transition(StateStable, now)
	// Too long for the group log, the members are not recorded: the
	// rebalance below stores the group when it completes.
	_ = c.storeGroup(now, g)
	if rebalance {
		c.prepareRebalance(now, g)
	}
}

// allClassic: every member of cg speaks the classic protocol.
func allClassic(cg *consumerGroup) bool {
	for _, m := range cg.members {
		if m.classic == nil {
			return false
		}
	}
	return len(cg.members) > 0
}
