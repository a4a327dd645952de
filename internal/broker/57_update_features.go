package broker

// UpdateFeatures, v0–v2 (KIP-584; v1: validate_only and upgrade types,
// KIP-778; v2: no per-feature results). Kafka 4.0 serves v0–v2.
//
// minibroker finalizes no feature (ApiVersions lists none), so every
// feature's level is 0 and level 0 is the only one it supports. As
// Kafka's controller (FeatureControlManager.updateFeature, in request
// order, the first error failing the whole request): an unknown upgrade
// type, a negative level or a level the node does not support is
// INVALID_UPDATE_VERSION, answered as the top-level error (its message
// names the feature) with no per-feature results; a level-0 update is a no-op and
// answers NONE, with a NONE result per feature for v0–v1. validate_only
// changes nothing either way (nothing is ever written). v0's
// allow_downgrade is upgrade type SAFE_DOWNGRADE, else UPGRADE, as
// Kafka's UpdateFeaturesRequest converts it.
//
// Deviation: Kafka rejects level 0 for a feature name it does not know
// and for metadata.version (a downgrade below its current level);
// minibroker has neither names nor a metadata.version and accepts level
// 0 for any name as the no-op it is. ALTER on the cluster is checked
// before (authz_table.go).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

// Kafka's FeatureUpdate.UpgradeType codes.
const (
	upgradeTypeUpgrade         = 1
	upgradeTypeUnsafeDowngrade = 3
	upgradeTypeSafeDowngrade   = 2
)

func (b *Broker) handleUpdateFeatures(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	for _, u := range req.FeatureUpdates {
		if reason := featureUpdateRejected(req.Version, u); reason != "" {
			resp.ErrorCode = kerr.InvalidUpdateVersion.Code
			resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("no feature updated: feature %s at level %d: %s", u.Feature, u.MaxVersionLevel, reason))
			return resp
		}
	}
	if req.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			res := kmsg.NewUpdateFeaturesResponseResult()
			res.Feature = u.Feature
			resp.Results = append(resp.Results, res)
		}
	}
	return resp
}

// featureUpdateRejected is why Kafka's controller refuses u ("" when it
// is accepted: level 0, every feature's level here).
func featureUpdateRejected(version int16, u kmsg.UpdateFeaturesRequestFeatureUpdate) string {
	typ := u.UpgradeType
	if version == 0 {
		typ = upgradeTypeUpgrade
		if u.AllowDowngrade {
			typ = upgradeTypeSafeDowngrade
		}
	}
	switch {
	case typ < upgradeTypeUpgrade || typ > upgradeTypeUnsafeDowngrade:
		return "unknown upgrade type"
	case u.MaxVersionLevel < 0:
		return "a level cannot be negative"
	case u.MaxVersionLevel > 0:
		return "minibroker finalizes no feature and supports level 0 only"
	}
	return ""
}
