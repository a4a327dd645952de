package broker

// DescribeClientQuotas, v0–v1.
//
// Answers from the client quotas store (internal/quota) as Kafka's
// ClientQuotasImage.describe: each filter component matches an entity
// type exactly (a name), its default (null name) or any name; strict
// leaves out entities with components the filter does not name. A bad
// filter answers INVALID_REQUEST, an unknown entity type
// UNSUPPORTED_VERSION (Kafka's codes), with Kafka's message. Needs
// DESCRIBE_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/quota"
)

func (b *Broker) handleDescribeClientQuotas(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !b.authorizedCluster(r, aclDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Description)
		return resp
	}
	filters := make([]quota.Filter, 0, len(req.Components))
	for _, c := range req.Components {
		filters = append(filters, quota.Filter{Type: c.EntityType, MatchType: int8(c.MatchType), Match: c.Match})
	}
	entries, err := b.quotas.Store().Describe(filters, req.Strict)
	if err != nil {
		var fe *quota.FilterError
		switch {
		case errors.As(err, &fe):
			resp.ErrorCode = kerr.InvalidRequest.Code
			resp.ErrorMessage = kmsg.StringPtr(fe.Message)
		case errors.Is(err, quota.ErrUnsupportedType):
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			resp.ErrorMessage = kmsg.StringPtr(err.Error())
		default:
			resp.ErrorCode = kerr.UnknownServerError.Code
		}
		return resp
	}
	for _, e := range entries {
		re := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range e.Entity.Components() {
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = p.Type, p.Name
			re.Entity = append(re.Entity, ent)
		}
		keys := make([]string, 0, len(e.Values))
		for k := range e.Values {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, e.Values[k]
			re.Values = append(re.Values, v)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp
}
