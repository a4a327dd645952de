package broker

// ListGroups, v0–v5.
//
// Every group the coordinator knows, including Empty groups that only
// hold committed offsets. v4+ filters by state (case-insensitive, as
// Kafka); v5 by group type: every group is "classic", so a types filter
// without "classic" lists nothing.

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
	if len(req.TypesFilter) > 0 {
		classic := false
		for _, t := range req.TypesFilter {
			classic = classic || strings.EqualFold(t, "classic")
		}
		if !classic {
			return resp
		}
	}
	for _, g := range b.groups.ListGroups() {
		if len(states) > 0 && !states[strings.ToLower(g.State.String())] {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.Group, g.ProtocolType, g.State.String(), "classic"
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
