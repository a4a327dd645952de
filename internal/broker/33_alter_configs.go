package broker

// AlterConfigs, v0–v2 (the legacy, non-incremental API).
//
// Topics: the configs given become the topic's whole set of overrides;
// every override not given is removed (back to the broker setting or the
// default), as Kafka's legacyAlterConfigResource does. The set is checked
// against the settings table and, unless validate_only, stored durably in
// topics.json and applied to the running partitions: all or nothing per
// resource. Errors, as Kafka's: a resource named twice, a config named
// twice, a null value: INVALID_REQUEST; an unknown config name or a value
// outside its rule: INVALID_CONFIG naming the key; an unknown topic:
// UNKNOWN_TOPIC_OR_PARTITION.
//
// Brokers: the configs given become the resource's whole set of dynamic
// broker configs, for this node (resource name its id) or the cluster
// default (""), as Kafka's (broker_configs.go).

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleAlterConfigs(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	keys := make([]resourceKey, len(req.Resources))
	for i, rr := range req.Resources {
		keys[i] = resourceKey{rr.ResourceType, rr.ResourceName}
	}
	errs := alterResources(keys, func(i int) error { return b.alterResource(req.Resources[i], req.ValidateOnly) })
	for i, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if err := errs[i]; err != nil {
			sr.ErrorCode, sr.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

func (b *Broker) alterResource(rr kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	names := make([]string, len(rr.Configs))
	configs := make(map[string]string, len(rr.Configs))
	var nulls []string
	for i, c := range rr.Configs {
		names[i] = c.Name
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		configs[c.Name] = *c.Value
	}
	if err := checkAlterNames(names); err != nil {
		return err
	}
	if len(nulls) > 0 {
		return fmt.Errorf("%w: null value not supported for: %s", errInvalidRequest, strings.Join(nulls, ", "))
	}
	if rr.ResourceType == kmsg.ConfigResourceTypeBroker {
		// As Kafka's AlterConfigs: the resource's dynamic settings become
		// exactly these (broker_configs.go).
		return b.alterBrokerConfigs(rr.ResourceName, func(cfgs map[string]string) error {
			clear(cfgs)
			maps.Copy(cfgs, configs)
			return nil
		}, validateOnly)
	}
	if rr.ResourceType != kmsg.ConfigResourceTypeTopic {
		return b.checkNonTopicResource(rr.ResourceType, rr.ResourceName)
	}
	return b.SetTopicConfigs(rr.ResourceName, configs, validateOnly)
}
