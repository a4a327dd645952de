package broker

// ListGroups, v0–v5.
//
// Every group the coordinator knows, including Empty groups that only
// hold committed offsets. v4+ filters by state (case-insensitive, as
// Kafka: a consumer group's states are Empty, Assigning, Reconciling,
// Stable); v5 by group type ("classic", "consumer" or "share", case-insensitive).
// A consumer group (KIP-848) lists protocol type "consumer"; a share
// group (KIP-932) type and protocol type "share", state Empty or Stable.

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleListGroups(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	states := map[string]bool{}
	for _, s := range req.StatesFilter {
		states[strings.ToLower(s)] = true
	}
	types := map[string]bool{}
	for _, t := range req.TypesFilter {
		types[strings.ToLower(strings.TrimSpace(t))] = true
	}
	for _, g := range b.groups.ListGroups() {
		if len(states) > 0 && !states[strings.ToLower(g.StateName)] {
			continue
		}
		if len(types) > 0 && !types[g.Type] {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.Group, g.ProtocolType, g.StateName, g.Type
		resp.Groups = append(resp.Groups, rg)
	}
	for _, g := range b.shares.List() {
		if len(states) > 0 && !states[strings.ToLower(g.State)] {
			continue
		}
		if len(types) > 0 && !types["share"] {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.ID, "share", g.State, "share"
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
