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

func (b *Broker) apis() map[int16]api {
	return map[int16]api{
		0:  {3, 11, b.handleProduce},
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
		24: {0, 3, b.handleAddPartitionsToTxn},
		25: {0, 4, b.handleAddOffsetsToTxn},
		26: {0, 4, b.handleEndTxn},
		27: {0, 1, b.handleWriteTxnMarkers},
		28: {0, 4, b.handleTxnOffsetCommit},
		29: {0, 3, b.handleDescribeAcls},
		30: {0, 3, b.handleCreateAcls},
		31: {0, 3, b.handleDeleteAcls},
		32: {0, 4, b.handleDescribeConfigs},
		36: {0, 2, b.handleSaslAuthenticate},
		33: {0, 2, b.handleAlterConfigs},
		34: {1, 2, b.handleAlterReplicaLogDirs},
		35: {0, 4, b.handleDescribeLogDirs},
		37: {0, 3, b.handleCreatePartitions},
		42: {0, 3, b.handleDeleteGroups},
		43: {0, 2, b.handleElectLeaders},
		44: {0, 1, b.handleIncrementalAlterConfigs},
		45: {0, 1, b.handleAlterPartitionReassignments},
		46: {0, 0, b.handleListPartitionReassignments},
		47: {0, 0, b.handleOffsetDelete},
		50: {0, 0, b.handleDescribeUserScramCredentials},
		51: {0, 0, b.handleAlterUserScramCredentials},
		55: {0, 2, b.handleDescribeQuorum},
		60: {0, 2, b.handleDescribeCluster},
		61: {0, 0, b.handleDescribeProducers},
		65: {0, 0, b.handleDescribeTransactions},
		66: {0, 1, b.handleListTransactions},
		71: {0, 0, b.handleGetTelemetrySubscriptions},
		72: {0, 0, b.handlePushTelemetry},
		74: {0, 1, b.handleListConfigResources},
		75: {0, 0, b.handleDescribeTopicPartitions},
		48: {0, 1, b.handleDescribeClientQuotas},
		49: {0, 1, b.handleAlterClientQuotas},
	}
}

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
