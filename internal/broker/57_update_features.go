package broker

// UpdateFeatures, v0–v2 (KIP-584; v1: validate_only and upgrade types,
// KIP-778; v2: no per-feature results). Kafka 4.0 serves v0–v2.
//
// The one feature minibroker serves is transaction.version, 0–2
// (features.go); every other feature is at level 0 and level 0 is the
// only one it takes. As Kafka's controller (FeatureControlManager, in
// request order, the first error failing the whole request): an unknown
// upgrade type, a negative level, a level the node does not support, or a
// downgrade asked with upgrade type UPGRADE is INVALID_UPDATE_VERSION,
// answered as the top-level error (its message names the feature) with
// no per-feature results. Otherwise the levels are set together, durably
// (features.json), unless validate_only; the answer is NONE, with a NONE
// result per feature for v0–v1. v0's allow_downgrade is upgrade type
// SAFE_DOWNGRADE, else UPGRADE, as Kafka's UpdateFeaturesRequest converts
// it. A transaction.version change only changes what ApiVersions tells
// clients; transactions already open go on under the version their
// requests use, as in Kafka.
//
// Deviation: Kafka rejects level 0 for a feature name it does not know
// and for metadata.version (a downgrade below its current level);
// minibroker has no metadata.version and accepts level 0 for any name as
// the no-op it is. ALTER on the cluster is checked before
// (authz_table.go).

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
	levels := map[string]int16{}
	for _, u := range req.FeatureUpdates {
		if reason := featureUpdateRejected(req.Version, u, b.features.level(u.Feature)); reason != "" {
			resp.ErrorCode = kerr.InvalidUpdateVersion.Code
			resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("no feature updated: feature %s at level %d: %s", u.Feature, u.MaxVersionLevel, reason))
			return resp
		}
		levels[u.Feature] = u.MaxVersionLevel
	}
	if !req.ValidateOnly {
		if err := b.features.set(levels); err != nil {
			b.logger.Sugar().Errorw("feature update not saved", "error", err)
			resp.ErrorCode = kerr.UnknownServerError.Code
			resp.ErrorMessage = kmsg.StringPtr("no feature updated: " + err.Error())
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

// featureUpdateRejected is why Kafka's controller refuses u, whose
// feature is finalized at current ("" when it is accepted).
func featureUpdateRejected(version int16, u kmsg.UpdateFeaturesRequestFeatureUpdate, current int16) string {
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
	}
	s, served := supportedFeatures[u.Feature]
	switch {
	case !served && u.MaxVersionLevel > 0:
		return "minibroker does not serve this feature and supports level 0 only"
	case served && u.MaxVersionLevel > s.max:
		return fmt.Sprintf("the supported levels are %d to %d", s.min, s.max)
	case u.MaxVersionLevel < current && typ == upgradeTypeUpgrade:
		return fmt.Sprintf("a downgrade from level %d needs the SAFE_DOWNGRADE or UNSAFE_DOWNGRADE upgrade type", current)
	}
	return ""
}
