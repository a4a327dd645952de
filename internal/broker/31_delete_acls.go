package broker

// DeleteAcls, v0–v3 (KIP-140; pattern types since v1, KIP-290).
//
// Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED on every
// filter); with no authorizer SECURITY_DISABLED. Each filter selects as in
// DescribeAcls (a v0 filter is LITERAL); an invalid filter answers
// INVALID_REQUEST and deletes nothing. Every binding a valid filter
// selects is removed, durably (DATA/acls rewritten atomically) before the
// answer, and listed under each filter that selected it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/acl"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleDeleteAcls(_ context.Context, req *protocol.Request) kmsg.Response {
	r := req.Body.(*kmsg.DeleteACLsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(r.Filters))
	if code, msg := b.aclWriteRefusal(req, "DeleteAcls"); code != 0 {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, kmsg.StringPtr(msg)
		}
		return resp
	}
	var filters []acl.Filter
	var at []int
	for i, fr := range r.Filters {
		f := acl.Filter{ResourceType: fr.ResourceType, ResourceName: fr.ResourceName, PatternType: fr.ResourcePatternType,
			Principal: fr.Principal, Host: fr.Host, Operation: fr.Operation, Permission: fr.PermissionType}
		if r.Version == 0 {
			f.PatternType = kmsg.ACLResourcePatternTypeLiteral
		}
		if err := f.Validate(); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
			continue
		}
		filters, at = append(filters, f), append(at, i)
	}
	deleted, err := b.authz.Delete(filters)
	if err != nil {
		b.logger.Error("DeleteAcls: " + err.Error())
		for _, i := range at {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr("the ACLs could not be stored")
		}
		return resp
	}
	var all []acl.Binding
	for j, bs := range deleted {
		res := &resp.Results[at[j]]
		for _, bd := range bs {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = bd.ResourceType, bd.ResourceName, bd.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = bd.Principal, bd.Host, bd.Operation, bd.Permission
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
		all = append(all, bs...)
	}
	if len(all) > 0 {
		b.logger.Info("ACLs deleted", zapPrincipal(req), zapBindings(all))
	}
	return resp
}
