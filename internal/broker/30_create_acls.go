package broker

// CreateAcls, v0–v3 (KIP-140; pattern types since v1, KIP-290).
//
// Needs ALTER on the cluster (else every creation answers
// CLUSTER_AUTHORIZATION_FAILED); with no authorizer configured every
// creation answers SECURITY_DISABLED, as Kafka. Each binding is checked
// (acl.Binding.Validate: INVALID_REQUEST with the reason); the valid ones
// are written to DATA/acls atomically before the answer, so an
// acknowledged ACL survives a crash. Creating an existing ACL succeeds
// and keeps one copy. Deviation: bindings on DELEGATION_TOKEN and USER
// resources are refused (INVALID_REQUEST); minibroker has neither.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/acl"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleCreateAcls(_ context.Context, req *protocol.Request) kmsg.Response {
	r := req.Body.(*kmsg.CreateACLsRequest)
	resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(r.Creations))
	if code, msg := b.aclWriteRefusal(req, "CreateAcls"); code != 0 {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, kmsg.StringPtr(msg)
		}
		return resp
	}
	var valid []acl.Binding
	var at []int
	for i, c := range r.Creations {
		pt := c.ResourcePatternType
		if r.Version == 0 {
			pt = kmsg.ACLResourcePatternTypeLiteral
		}
		bd := acl.Binding{ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: pt,
			Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType}
		if err := bd.Validate(); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
			continue
		}
		valid, at = append(valid, bd), append(at, i)
	}
	if len(valid) == 0 {
		return resp
	}
	if err := b.authz.Create(valid); err != nil {
		b.logger.Error("CreateAcls: " + err.Error())
		for _, i := range at {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr("the ACLs could not be stored")
		}
		return resp
	}
	b.logger.Info("ACLs created", zapPrincipal(req), zapBindings(valid))
	return resp
}

// aclWriteRefusal is why CreateAcls or DeleteAcls (api) is refused as a
// whole, every result with the same code (as Kafka answers them): no
// authorizer, or no ALTER on the cluster. code is 0 when it may go on.
func (b *Broker) aclWriteRefusal(req *protocol.Request, api string) (code int16, msg string) {
	switch {
	case b.authz == nil:
		return kerr.SecurityDisabled.Code, "no authorizer is configured (authorizer.class.name)"
	case !b.authorizedCluster(req, kmsg.ACLOperationAlter):
		return kerr.ClusterAuthorizationFailed.Code, api + " needs ALTER on the cluster"
	}
	return 0, ""
}
