package broker

// ListConfigResources, v0–v1 (v0 was ListClientMetricsResources,
// KIP-714; v1 is KIP-1142).
//
// v0 lists the CLIENT_METRICS resources (the subscriptions altered in
// with IncrementalAlterConfigs). v1 lists the resource types asked for,
// all of TOPIC, BROKER, BROKER_LOGGER, GROUP and CLIENT_METRICS when
// none is: every topic, this node (as BROKER and BROKER_LOGGER), the
// groups with configs set and the client-metrics resources. A type
// outside those is UNSUPPORTED_VERSION, as Kafka answers. DESCRIBE_CONFIGS
// on the cluster is checked before (authz_table.go).

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleListConfigResources(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	supported := []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeClientMetrics}
	if req.Version >= 1 {
		supported = []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker,
			kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeClientMetrics}
	}
	wanted := map[kmsg.ConfigResourceType]bool{}
	if len(req.ResourceTypes) == 0 {
		for _, t := range supported {
			wanted[t] = true
		}
	}
	for _, t := range req.ResourceTypes {
		ok := false
		for _, s := range supported {
			ok = ok || kmsg.ConfigResourceType(t) == s
		}
		if !ok {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp
		}
		wanted[kmsg.ConfigResourceType(t)] = true
	}
	resp.ConfigResources = []kmsg.ListConfigResourcesResponseConfigResource{}
	add := func(name string, t kmsg.ConfigResourceType) {
		cr := kmsg.NewListConfigResourcesResponseConfigResource()
		cr.Name, cr.Type = name, int8(t)
		resp.ConfigResources = append(resp.ConfigResources, cr)
	}
	for _, t := range supported {
		if !wanted[t] {
			continue
		}
		switch t {
		case kmsg.ConfigResourceTypeTopic:
			for _, n := range b.TopicNames() {
				add(n, t)
			}
		case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
			add(strconv.Itoa(int(b.nodeID)), t)
		case kmsg.ConfigResourceTypeGroupConfig:
			for _, n := range b.resourceConfigs.names(kmsg.ConfigResourceTypeGroupConfig) {
				add(n, t)
			}
		case kmsg.ConfigResourceTypeClientMetrics:
			for _, n := range b.resourceConfigs.names(kmsg.ConfigResourceTypeClientMetrics) {
				add(n, t)
			}
		}
	}
	return resp
}
