package broker

// DescribeAcls, v0–v3 (KIP-140; pattern types since v1, KIP-290).
//
// Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED); with no
// authorizer SECURITY_DISABLED. The filter's fields (resource type,
// name, pattern type incl. ANY and MATCH, principal, host, operation,
// permission) select as Kafka's AclBindingFilter; a v0 filter is LITERAL.
// An unknown enum value answers INVALID_REQUEST. Bindings are grouped by
// resource pattern, in creation order.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/acl"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleDescribeAcls(_ context.Context, req *protocol.Request) kmsg.Response {
	r := req.Body.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	switch {
	case b.authz == nil:
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr("no authorizer is configured (authorizer.class.name)")
		return resp
	case !b.authorizedCluster(req, kmsg.ACLOperationDescribe):
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr("DescribeAcls needs DESCRIBE on the cluster")
		return resp
	}
	f := acl.Filter{ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.ResourcePatternType,
		Principal: r.Principal, Host: r.Host, Operation: r.Operation, Permission: r.PermissionType}
	if r.Version == 0 {
		f.PatternType = kmsg.ACLResourcePatternTypeLiteral
	}
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		return resp
	}
	type pattern struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
	}
	at := map[pattern]int{}
	for _, bd := range b.authz.Describe(f) {
		p := pattern{bd.ResourceType, bd.ResourceName, bd.PatternType}
		i, ok := at[p]
		if !ok {
			i = len(resp.Resources)
			at[p] = i
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = p.rt, p.name, p.pt
			resp.Resources = append(resp.Resources, res)
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = bd.Principal, bd.Host, bd.Operation, bd.Permission
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, e)
	}
	return resp
}
