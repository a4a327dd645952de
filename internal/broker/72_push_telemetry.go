package broker

// PushTelemetry, v0 (KIP-714), as Kafka's ClientMetricsManager answers a
// broker with no client-metrics subscriptions (telemetry.go).
//
// In Kafka's order: a zero (or reserved) client instance id is
// INVALID_REQUEST; a push after the instance said it was terminating is
// INVALID_REQUEST; a push within the push interval of the last one (the
// first push after a GetTelemetrySubscriptions is always let through),
// unless terminating, is THROTTLING_QUOTA_EXCEEDED; a subscription id
// other than the instance's is UNKNOWN_SUBSCRIPTION_ID; a compression
// type Kafka does not know (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd) is
// UNSUPPORTED_COMPRESSION_TYPE; metrics over 1 MiB are
// TELEMETRY_TOO_LARGE. Accepted metrics are dropped: nothing here
// receives them. No ACL is needed (Kafka).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handlePushTelemetry(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.PushTelemetryRequest)
	resp := req.ResponseKind().(*kmsg.PushTelemetryResponse)
	if isReservedUUID(req.ClientInstanceID) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	now := time.Now()
	tc := &b.telemetry
	tc.mu.Lock()
	defer tc.mu.Unlock()
	c := tc.instanceLocked(req.ClientInstanceID, now)
	code := c.validatePush(req, now)
	c.terminating = req.Terminating
	c.lastErrorCode = code
	c.subscriptionExempt = code == kerr.UnknownSubscriptionID.Code || code == kerr.UnsupportedCompressionType.Code
	resp.ErrorCode = code
	return resp
}

func (c *telemetryClient) validatePush(req *kmsg.PushTelemetryRequest, now time.Time) int16 {
	if c.terminating {
		return kerr.InvalidRequest.Code
	}
	accept := c.lastGet.After(c.lastPush) || c.lastPush.IsZero() || now.Sub(c.lastPush) >= telemetryPushInterval
	if accept {
		c.lastPush = now
	} else if !req.Terminating {
		return kerr.ThrottlingQuotaExceeded.Code
	}
	if req.SubscriptionID != c.subscriptionID {
		return kerr.UnknownSubscriptionID.Code
	}
	if req.CompressionType < 0 || req.CompressionType > 4 {
		return kerr.UnsupportedCompressionType.Code
	}
	if len(req.Metrics) > telemetryMaxBytes {
		return kerr.TelemetryTooLarge.Code
	}
	return 0
}

// isReservedUUID: Kafka's Uuid.RESERVED, the zero id and the
// metadata-topic id (0…01).
func isReservedUUID(id [16]byte) bool {
	var one [16]byte
	one[15] = 1
	return id == [16]byte{} || id == one
}
