package coordinator

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupSummary is one group in ListGroups.
type GroupSummary struct {
	Group        string
	ProtocolType string
	State        GroupState // a classic group's
	// Type is "classic" or "consumer"; StateName the state as
	// ListGroups names it (a consumer group's: Empty, Assigning,
	// Reconciling, Stable).
	Type, StateName string
}

// ListGroups lists every group (not Dead).
func (c *groupCore) ListGroups() []GroupSummary {
	out := make([]GroupSummary, 0, len(c.groups))
	for id, g := range c.groups {
		if g.cg != nil {
			out = append(out, GroupSummary{Group: id, ProtocolType: "consumer", State: StateEmpty, Type: "consumer", StateName: g.cg.stateName()})
			continue
		}
		out = append(out, GroupSummary{Group: id, ProtocolType: g.protocolType, State: g.state, Type: "classic", StateName: g.state.String()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

// MemberDescription is one member in DescribeGroups.
type MemberDescription struct {
	MemberID, InstanceID, ClientID, ClientHost string
	Metadata, Assignment                       []byte
}

// GroupDescription answers DescribeGroups for one group.
type GroupDescription struct {
	Group        string
	State        GroupState
	ProtocolType string
	Protocol     string // only when Stable, as Kafka
	Members      []MemberDescription
	Generation   int32
	Leader       string
	// Err: a consumer group is not described by DescribeGroups
	// (GROUP_ID_NOT_FOUND, State Dead).
	Err error
}

// DescribeGroup describes a group; an unknown one is Dead with no members,
// as Kafka answers.
func (c *groupCore) DescribeGroup(id string) GroupDescription {
	g := c.groups[id]
	if g == nil {
		return GroupDescription{Group: id, State: StateDead}
	}
	if g.cg != nil {
		return GroupDescription{Group: id, State: StateDead,
			Err: fmt.Errorf("%w: Group %s is not a classic group.", ErrGroupIDNotFound, id)}
	}
	d := GroupDescription{Group: id, State: g.state, ProtocolType: g.protocolType, Generation: g.generation, Leader: g.leader}
	stable := g.state == StateStable
	if stable {
		d.Protocol = g.protocol
	}
	for _, m := range g.sortedMembers() {
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if stable {
			md.Metadata, md.Assignment = m.metadataFor(g.protocol), m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d
}

// subscribedTopics are the topics a consumer-protocol group's members
// subscribe to, from their subscription metadata.
func subscribedTopics(g *group) map[string]bool {
	topics := map[string]bool{}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			continue
		}
		for _, t := range meta.Topics {
			topics[t] = true
		}
	}
	return topics
}

// groupCounts are metrics: groups by state, members.
func (c *groupCore) groupCounts() (byState map[GroupState]int, members int) {
	byState = map[GroupState]int{}
	for _, g := range c.groups {
		byState[g.state]++
		members += len(g.members)
		if g.cg != nil {
			members += len(g.cg.members)
		}
	}
	return byState, members
}
