package broker

// DeleteGroups, v0–v3.
//
// Deletes Empty groups with their committed offsets (durably, before the
// response). A group with members answers NON_EMPTY_GROUP, an unknown one
// GROUP_ID_NOT_FOUND. v3 adds a per-group ErrorMessage, left null. A
// share group (KIP-932) is deleted with its share partitions' state the
// same way (share.Coordinator.DeleteGroup).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleDeleteGroups(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	errs := b.groups.DeleteGroups(req.Groups)
	for i, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = id, errorCode(errs[i])
		if b.shares.Exists(id) {
			rg.ErrorCode = 0
			if e := b.shares.DeleteGroup(id); e != nil {
				rg.ErrorCode = e.Code
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
