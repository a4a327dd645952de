package broker

// GetTelemetrySubscriptions, v0 (KIP-714), as Kafka's
// ClientMetricsManager answers a broker with no client-metrics
// subscriptions (telemetry.go).
//
// A zero client instance id is given a new random one. The answer asks
// for no metrics (RequestedMetrics empty), with Kafka's defaults: push
// interval 300000 ms, telemetry max bytes 1 MiB, delta temporality, the
// compression types zstd, lz4, gzip, snappy, and Kafka's subscription id
// (CRC-32C of the empty subscription XOR the instance id's hash). A
// second request within the push interval since the instance's last
// request or push is THROTTLING_QUOTA_EXCEEDED, unless the instance's
// last push failed with UNKNOWN_SUBSCRIPTION_ID or
// UNSUPPORTED_COMPRESSION_TYPE (Kafka's intent; its 4.0 check lets
// neither through). No ACL is needed (Kafka).
//
// Deviation: Kafka advertises the telemetry APIs only when a metrics
// reporter that receives client metrics is configured; minibroker always
// serves them, as such a broker with no subscriptions.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleGetTelemetrySubscriptions(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	now := time.Now()
	tc := &b.telemetry
	tc.mu.Lock()
	defer tc.mu.Unlock()
	id := req.ClientInstanceID
	if id == ([16]byte{}) {
		id = tc.newClientInstanceIDLocked()
	}
	c := tc.instanceLocked(id, now)
	last := c.lastGet
	if c.lastPush.After(last) {
		last = c.lastPush
	}
	if !last.IsZero() && now.Sub(last) < telemetryPushInterval && !c.subscriptionExempt {
		resp.ErrorCode = kerr.ThrottlingQuotaExceeded.Code
		return resp
	}
	c.lastGet = now
	c.lastErrorCode, c.subscriptionExempt = 0, false
	resp.ClientInstanceID = id
	resp.SubscriptionID = c.subscriptionID
	resp.AcceptedCompressionTypes = append([]int8(nil), telemetryCompressions...)
	resp.PushIntervalMillis = int32(telemetryPushInterval / time.Millisecond)
	resp.TelemetryMaxBytes = telemetryMaxBytes
	resp.DeltaTemporality = true
	resp.RequestedMetrics = []string{}
	return resp
}
