package broker

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

// api is one served Kafka API: its version range and handler. This table
// is the single source of truth: ApiVersions is built from it, so what is
// advertised is exactly what is served.
type api struct {
	min, max int16
	fn       func(ctx context.Context, req *protocol.Request) kmsg.Response
}

// apis is the table for client.protocol.version: Kafka 4's ranges by
// default, Kafka 3.9's with "3.9" (kafka39Ranges).
func (b *Broker) apis() map[int16]api {
	t := b.kafka4APIs()
	if b.cfg.String("client.protocol.version") == "3.9" {
		for key, a := range t {
			r, ok := kafka39Ranges[key]
			if !ok {
				delete(t, key)
				continue
			}
			a.min, a.max = r[0], min(a.max, r[1])
			t[key] = a
		}
	}
	return t
}

// kafka4APIs: the versions Kafka 4 serves (KIP-896 removed the versions
// older than Kafka 2.1's), up to the newest minibroker implements.
func (b *Broker) kafka4APIs() map[int16]api {
	return map[int16]api{
		0:  {3, 12, b.handleProduce},
		1:  {4, 18, b.handleFetch},
		2:  {1, 10, b.handleListOffsets},
		3:  {0, 13, b.handleMetadata},
		8:  {0, 9, b.handleOffsetCommit},
		9:  {0, 9, b.handleOffsetFetch},
		10: {0, 6, b.handleFindCoordinator},
		11: {0, 9, b.handleJoinGroup},
		12: {0, 4, b.handleHeartbeat},
		13: {0, 5, b.handleLeaveGroup},
		14: {0, 5, b.handleSyncGroup},
		15: {0, 6, b.handleDescribeGroups},
		16: {0, 5, b.handleListGroups},
		17: {0, 1, b.handleSaslHandshake},
		18: {0, 4, b.handleApiVersions},
		19: {2, 7, b.handleCreateTopics},
		20: {1, 6, b.handleDeleteTopics},
		21: {0, 2, b.handleDeleteRecords},
		22: {0, 5, b.handleInitProducerID},
		23: {2, 4, b.handleOffsetForLeaderEpoch},
		24: {0, 5, b.handleAddPartitionsToTxn},
		25: {0, 4, b.handleAddOffsetsToTxn},
		26: {0, 5, b.handleEndTxn},
		27: {0, 1, b.handleWriteTxnMarkers},
		28: {0, 5, b.handleTxnOffsetCommit},
		29: {0, 3, b.handleDescribeAcls},
		30: {0, 3, b.handleCreateAcls},
		31: {0, 3, b.handleDeleteAcls},
		32: {0, 4, b.handleDescribeConfigs},
		36: {0, 2, b.handleSaslAuthenticate},
		33: {0, 2, b.handleAlterConfigs},
		34: {1, 2, b.handleAlterReplicaLogDirs},
		35: {0, 4, b.handleDescribeLogDirs},
		37: {0, 3, b.handleCreatePartitions},
		38: {1, 3, b.handleCreateDelegationToken},
		39: {1, 2, b.handleRenewDelegationToken},
		40: {1, 2, b.handleExpireDelegationToken},
		41: {1, 3, b.handleDescribeDelegationToken},
		42: {0, 3, b.handleDeleteGroups},
		43: {0, 2, b.handleElectLeaders},
		44: {0, 1, b.handleIncrementalAlterConfigs},
		45: {0, 1, b.handleAlterPartitionReassignments},
		46: {0, 0, b.handleListPartitionReassignments},
		47: {0, 0, b.handleOffsetDelete},
		50: {0, 0, b.handleDescribeUserScramCredentials},
		51: {0, 0, b.handleAlterUserScramCredentials},
		55: {0, 2, b.handleDescribeQuorum},
		57: {0, 2, b.handleUpdateFeatures},
		60: {0, 2, b.handleDescribeCluster},
		61: {0, 0, b.handleDescribeProducers},
		64: {0, 0, b.handleUnregisterBroker},
		65: {0, 0, b.handleDescribeTransactions},
		66: {0, 1, b.handleListTransactions},
		68: {0, 1, b.handleConsumerGroupHeartbeat},
		69: {0, 1, b.handleConsumerGroupDescribe},
		71: {0, 0, b.handleGetTelemetrySubscriptions},
		72: {0, 0, b.handlePushTelemetry},
		74: {0, 1, b.handleListConfigResources},
		76: {1, 1, b.handleShareGroupHeartbeat},
		77: {1, 1, b.handleShareGroupDescribe},
		78: {1, 2, b.handleShareFetch},
		79: {1, 2, b.handleShareAcknowledge},
		90: {0, 1, b.handleDescribeShareGroupOffsets},
		91: {0, 0, b.handleAlterShareGroupOffsets},
		92: {0, 0, b.handleDeleteShareGroupOffsets},
		80: {0, 0, b.handleAddRaftVoter},
		81: {0, 0, b.handleRemoveRaftVoter},
		75: {0, 0, b.handleDescribeTopicPartitions},
		48: {0, 1, b.handleDescribeClientQuotas},
		49: {0, 1, b.handleAlterClientQuotas},
	}
}

// kafka39Ranges are Kafka 3.9's version ranges (its
// clients/src/main/resources/common/message/*Request.json, validVersions,
// none of them unstable in 3.9) for the client-facing APIs: with
// client.protocol.version=3.9 each API is served from Kafka 3.9's
// minimum to the lower of the two maxima, so the ApiVersions answer is
// Kafka 3.9's.
var kafka39Ranges = map[int16][2]int16{
	0: {0, 11}, 1: {0, 17}, 2: {0, 9}, 3: {0, 12}, 8: {0, 9}, 9: {0, 9}, 10: {0, 6}, 11: {0, 9},
	12: {0, 4}, 13: {0, 5}, 14: {0, 5}, 15: {0, 5}, 16: {0, 5}, 17: {0, 1}, 18: {0, 4}, 19: {0, 7},
	20: {0, 6}, 21: {0, 2}, 22: {0, 5}, 23: {0, 4}, 24: {0, 5}, 25: {0, 4}, 26: {0, 4}, 27: {0, 1},
	28: {0, 4}, 29: {0, 3}, 30: {0, 3}, 31: {0, 3}, 32: {0, 4}, 33: {0, 2}, 34: {0, 2}, 35: {0, 4},
	36: {0, 2}, 37: {0, 3}, 38: {0, 3}, 39: {0, 2}, 40: {0, 2}, 41: {0, 3}, 42: {0, 2}, 43: {0, 2},
	44: {0, 1}, 45: {0, 0}, 46: {0, 0}, 47: {0, 0}, 48: {0, 1}, 49: {0, 1}, 50: {0, 0}, 51: {0, 0},
	55: {0, 2}, 57: {0, 1}, 60: {0, 1}, 61: {0, 0}, 64: {0, 0}, 65: {0, 0}, 66: {0, 1}, 68: {0, 0},
	69: {0, 0}, 71: {0, 0}, 72: {0, 0}, 74: {0, 0}, 75: {0, 0}, 80: {0, 0}, 81: {0, 0},
}

// newInKafka4 are the served APIs Kafka 3.9 did not serve: not served
// with client.protocol.version=3.9 (TestKafka39RangesCoverEveryAPI makes
// a new API choose between this list and kafka39Ranges).
var newInKafka4 = map[int16]bool{76: true, 77: true, 78: true, 79: true, 90: true, 91: true, 92: true}

// Handle implements protocol.Handler. With the authorizer on, the
// request is first checked against authzTable (authz_table.go). With a fault set (faults.enable)
// the request goes through the fault registry first (faults.go); without,
// that costs one atomic load.
func (b *Broker) Handle(ctx context.Context, req *protocol.Request) kmsg.Response {
	if adminAPIs[req.Key] {
		b.logAdmin(req)
	}
	deny, after := b.authorizeRequest(req)
	switch deny.(type) {
	case nil:
	case noResponse:
		return nil
	default:
		return deny
	}
	if b.knobs.panicInHandler != nil && b.knobs.panicInHandler(req.Key) {
		panic("panicInHandler: a handler panicking on purpose (test knob)")
	}
	var resp kmsg.Response
	ctx, quotas := b.quotasBefore(ctx, req)
	if b.faults.Active() {
		resp = b.handleWithFaults(ctx, req)
	} else {
		resp = b.handlers[req.Key].fn(ctx, req)
	}
	if after != nil && resp != nil {
		resp = after(resp)
		if _, ok := resp.(noResponse); ok {
			return nil
		}
	}
	b.quotasAfter(req, resp, quotas)
	return resp
}

// VersionRange implements protocol.Handler.
func (b *Broker) VersionRange(key int16) (int16, int16, bool) {
	a, ok := b.handlers[key]
	return a.min, a.max, ok
}

// ApiKeys implements protocol.Handler.
func (b *Broker) ApiKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(b.handlers))
	for k, a := range b.handlers {
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: a.min, MaxVersion: a.max})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ApiKey < keys[j].ApiKey })
	return keys
}
