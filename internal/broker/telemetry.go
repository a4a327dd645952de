package broker

// The client-telemetry state behind GetTelemetrySubscriptions and
// PushTelemetry (KIP-714), as Kafka's ClientMetricsManager keeps it for
// a broker with no client-metrics subscriptions: per client instance,
// its subscription id and when it last asked and pushed. Metrics pushed
// are dropped: minibroker has no receiver for them, so it asks for none
// (an empty RequestedMetrics).

import (
	"crypto/rand"
	"encoding/binary"
	"hash/crc32"
	"sync"
	"time"
)

const (
	// telemetryPushInterval is Kafka's ClientMetricsConfigs.DEFAULT_INTERVAL_MS,
	// the push interval when no subscription matches.
	telemetryPushInterval = 5 * time.Minute
	// telemetryMaxBytes is Kafka's telemetry.max.bytes default.
	telemetryMaxBytes = 1 << 20
	// telemetryMaxClients is Kafka's cache bound (16k client instances);
	// an instance unseen for max(60 s, 3 push intervals) is forgotten.
	telemetryMaxClients = 16384
	telemetryExpiry     = 3 * telemetryPushInterval
)

// telemetryCompressions are the compression types a push may use
// (Kafka's order: zstd, lz4, gzip, snappy).
var telemetryCompressions = []int8{4, 3, 1, 2}

type telemetryClient struct {
	subscriptionID     int32
	lastGet, lastPush  time.Time
	lastSeen           time.Time
	terminating        bool
	lastErrorCode      int16
	subscriptionExempt bool // the last error lets the next Get through at once
}

type telemetryClients struct {
	mu      sync.Mutex // guards clients
	clients map[[16]byte]*telemetryClient
}

// instance returns id's state, created when unknown, and forgets
// instances past their expiry (or the oldest, when full).
func (tc *telemetryClients) instanceLocked(id [16]byte, now time.Time) *telemetryClient {
	if tc.clients == nil {
		tc.clients = map[[16]byte]*telemetryClient{}
	}
	c, ok := tc.clients[id]
	if !ok {
		if len(tc.clients) >= telemetryMaxClients {
			var oldest [16]byte
			var oldestSeen time.Time
			for k, v := range tc.clients {
				if now.Sub(v.lastSeen) > telemetryExpiry {
					delete(tc.clients, k)
					continue
				}
				if oldestSeen.IsZero() || v.lastSeen.Before(oldestSeen) {
					oldest, oldestSeen = k, v.lastSeen
				}
			}
			if len(tc.clients) >= telemetryMaxClients {
				delete(tc.clients, oldest)
			}
		}
		c = &telemetryClient{subscriptionID: telemetrySubscriptionID(id)}
		tc.clients[id] = c
	}
	c.lastSeen = now
	return c
}

// newClientInstanceID is a random version-4 UUID that is not zero and
// not in use.
func (tc *telemetryClients) newClientInstanceIDLocked() [16]byte {
	for {
		var id [16]byte
		rand.Read(id[:])
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if _, used := tc.clients[id]; !used && id != ([16]byte{}) {
			return id
		}
	}
}

// telemetrySubscriptionID is Kafka's: the CRC-32C of the subscribed
// metrics' string form and the push interval ("[]300000" with none),
// XORed with the Java hash code of the client instance id.
func telemetrySubscriptionID(id [16]byte) int32 {
	crc := crc32.Checksum([]byte("[]300000"), crc32.MakeTable(crc32.Castagnoli))
	h := binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:])
	return int32(crc) ^ (int32(h>>32) ^ int32(h))
}
