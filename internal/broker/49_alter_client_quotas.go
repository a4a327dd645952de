package broker

// AlterClientQuotas, v0–v1.
//
// Sets or removes quotas of user, client-id (and their <default>, a null
// name) and ip entities, validated as Kafka's ClientQuotaControlManager
// does: the entity types and their combinations (ip alone), the keys
// each takes (producer_byte_rate, consumer_byte_rate, request_percentage,
// controller_mutation_rate; connection_creation_rate for ip), values > 0,
// integral keys without fractions; a bad entry answers INVALID_REQUEST
// with Kafka's message and the others still apply. validate_only checks
// and changes nothing. A change is written to the data directory's
// client-quotas file (fsynced, renamed) before the answer, and enforced
// at once (quotas.go). Needs ALTER_CONFIGS on the cluster
// (CLUSTER_AUTHORIZATION_FAILED on each entry).
//
// Deviations: an entity named twice in one request is refused in both
// entries (Kafka keeps the first's change); an ip entity must be an IP
// address (Kafka also resolves a host name).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/quota"
)

func (b *Broker) handleAlterClientQuotas(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	entry := func(e kmsg.AlterClientQuotasRequestEntry, code int16, msg *string) {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, c := range e.Entity {
			ent := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = c.Type, c.Name
			re.Entity = append(re.Entity, ent)
		}
		re.ErrorCode, re.ErrorMessage = code, msg
		resp.Entries = append(resp.Entries, re)
	}
	if !b.authorizedCluster(r, aclAlterConfigs) {
		for _, e := range req.Entries {
			entry(e, kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Description))
		}
		return resp
	}
	alts := make([]quota.Alteration, 0, len(req.Entries))
	for _, e := range req.Entries {
		var a quota.Alteration
		for _, c := range e.Entity {
			a.Parts = append(a.Parts, quota.Part{Type: c.Type, Name: c.Name})
		}
		for _, op := range e.Ops {
			a.Ops = append(a.Ops, quota.Op{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
		alts = append(alts, a)
	}
	results := b.quotas.Store().Alter(alts, req.ValidateOnly)
	for i, e := range req.Entries {
		switch res := results[i]; {
		case res.Message == "":
			entry(e, 0, nil)
		case res.Storage:
			b.logger.Error("client quotas not saved", zap.String("error", res.Message))
			entry(e, kerr.KafkaStorageError.Code, kmsg.StringPtr("client quotas not saved"))
		default:
			entry(e, kerr.InvalidRequest.Code, kmsg.StringPtr(res.Message))
		}
	}
	if !req.ValidateOnly {
		b.logger.Info("client quotas altered", zap.String("principal", principal(r)), zap.Int("entries", len(req.Entries)))
	}
	return resp
}
