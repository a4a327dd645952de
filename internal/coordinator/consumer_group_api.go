package coordinator

import (
	"fmt"
	"slices"
	"time"
)

// ConsumerMemberDescription is one member in ConsumerGroupDescribe.
type ConsumerMemberDescription struct {
	MemberID, InstanceID, RackID string // "" for null
	MemberEpoch                  int32
	Classic                      bool // speaks the classic protocol (MemberType 0)
	ClientID, ClientHost         string
	SubscribedTopicNames         []string
	SubscribedTopicRegex         string
	Assignment, TargetAssignment []OwnedTopic
}

// ConsumerGroupDescription answers ConsumerGroupDescribe for one group.
type ConsumerGroupDescription struct {
	Err             error
	Group           string
	State           string
	Epoch           int32
	AssignmentEpoch int32
	AssignorName    string
	Members         []ConsumerMemberDescription
}

func topicList(a assignment) []OwnedTopic {
	out := []OwnedTopic{}
	for _, t := range a.topics() {
		out = append(out, OwnedTopic{ID: t, Partitions: slices.Clone(a[t])})
	}
	return out
}

// DescribeConsumerGroup is Kafka's ConsumerGroup.asDescribedGroup; a
// group that does not exist or is classic is GROUP_ID_NOT_FOUND.
func (c *groupCore) DescribeConsumerGroup(id string) ConsumerGroupDescription {
	g := c.groups[id]
	d := ConsumerGroupDescription{Group: id, State: "Dead", Epoch: -1, AssignmentEpoch: -1}
	switch {
	case g == nil:
		d.Err = fmt.Errorf("%w: Group %s not found.", ErrGroupIDNotFound, id)
		return d
	case g.cg == nil:
		d.Err = fmt.Errorf("%w: Group %s is not a consumer group.", ErrGroupIDNotFound, id)
		return d
	}
	cg := g.cg
	d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName = cg.stateName(), cg.epoch, cg.assignmentEpoch, c.assignorFor(cg)
	for _, m := range cg.sortedMembers() {
		d.Members = append(d.Members, ConsumerMemberDescription{
			MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, MemberEpoch: m.epoch, Classic: m.classic != nil,
			ClientID: m.clientID, ClientHost: m.clientHost, SubscribedTopicNames: slices.Clone(m.subscribedNames),
			SubscribedTopicRegex: m.regex, Assignment: topicList(m.assigned), TargetAssignment: topicList(cg.target[m.id]),
		})
	}
	return d
}

// validateConsumerCommit is Kafka's ConsumerGroup.validateOffsetCommit:
// epoch -1 commits only to a group without members; otherwise the member
// must exist, commit with OffsetCommit v9+ (non-transactional), and at
// its current member epoch (STALE_MEMBER_EPOCH otherwise).
func validateConsumerCommit(cg *consumerGroup, memberID string, epoch int32, version int16, transactional bool) error {
	if epoch < 0 && len(cg.members) == 0 {
		return nil
	}
	m := cg.members[memberID]
	if m == nil {
		return fmt.Errorf("%w: Member %s is not a member of the group.", ErrUnknownMemberID, memberID)
	}
	if !transactional && version < 9 && m.classic == nil {
		return fmt.Errorf("%w: OffsetCommit version 9 or above must be used by members using the modern group protocol", ErrUnsupportedVersion)
	}
	return checkCommitEpoch(m, epoch)
}

// checkCommitEpoch is Kafka's ConsumerGroup.validateMemberEpoch: the
// member's epoch, else STALE_MEMBER_EPOCH, or ILLEGAL_GENERATION for a
// member speaking the classic protocol (its generation is its epoch).
func checkCommitEpoch(m *cgMember, epoch int32) error {
	switch {
	case epoch == m.epoch:
		return nil
	case m.classic != nil:
		return fmt.Errorf("%w: The received generation id %d does not match the expected member epoch %d.", ErrIllegalGeneration, epoch, m.epoch)
	}
	return fmt.Errorf("%w: The received member epoch %d does not match the expected member epoch %d.", ErrStaleMemberEpoch, epoch, m.epoch)
}

// ValidateFetchMember is Kafka's validateOffsetFetch (OffsetFetch v9+):
// a request without member id and epoch (an admin) is accepted, as is any
// fetch of a classic group or of a group that does not exist (it answers
// no offsets); a member of a consumer group must exist and fetch at its
// current member epoch.
func (c *groupCore) ValidateFetchMember(groupID string, memberID *string, epoch int32) error {
	if memberID == nil && epoch < 0 {
		return nil
	}
	g := c.groups[groupID]
	if g == nil || g.cg == nil {
		return nil
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m := g.cg.members[id]
	if m == nil {
		return fmt.Errorf("%w: Member %s is not a member of group %s.", ErrUnknownMemberID, id, groupID)
	}
	return checkCommitEpoch(m, epoch)
}

// ConsumerHeartbeat serves ConsumerGroupHeartbeat; it returns once the
// records it wrote are durable.
func (g *Groups) ConsumerHeartbeat(req ConsumerHeartbeatRequest) ConsumerHeartbeatResult {
	var res ConsumerHeartbeatResult
	if err := g.call(func(now time.Time) {
		res = g.core.ConsumerHeartbeat(now, g.core.image, req)
	}); err != nil {
		return ConsumerHeartbeatResult{Err: err, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	}
	return res
}

// DescribeConsumerGroups serves ConsumerGroupDescribe.
func (g *Groups) DescribeConsumerGroups(ids []string) []ConsumerGroupDescription {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]ConsumerGroupDescription, len(ids))
	for i, id := range ids {
		out[i] = g.core.DescribeConsumerGroup(id)
	}
	return out
}

// ValidateFetchMember checks an OffsetFetch v9+ group's member id and epoch.
func (g *Groups) ValidateFetchMember(groupID string, memberID *string, epoch int32) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.core.ValidateFetchMember(groupID, memberID, epoch)
}

// topicImage is the broker's current topics (an empty image without a
// Topics function).
func (g *Groups) topicImage() *TopicImage {
	if g.opts.Topics == nil {
		return emptyTopicImage
	}
	if im := g.opts.Topics(); im != nil {
		return im
	}
	return emptyTopicImage
}

// consumerSubscribedTopics are the topics a consumer group's members
// subscribe to that exist (by name or regex).
func (c *groupCore) consumerSubscribedTopics(g *group) map[string]bool {
	return g.cg.subscribedTopicNames(c.image)
}
