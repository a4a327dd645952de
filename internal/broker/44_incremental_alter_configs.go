package broker

// IncrementalAlterConfigs, v0–v1 (KIP-339).
//
// Topics: each config op applies in order to the topic's overrides — SET
// (value required), DELETE (back to the broker setting or the default),
// APPEND and SUBTRACT (LIST configs only, cleanup.policy here: elements
// added if missing or removed, starting from the default when there is no
// override) — then the whole result is checked against the settings table
// and, unless validate_only, stored durably in topics.json and applied to
// the running partitions (segment size and age, retention, timestamp type
// and bounds, max message size, flush policy): all or nothing per
// resource. Errors, as Kafka's: a resource named twice, a config named
// twice in one resource, a null value on anything but DELETE, an unknown
// op: INVALID_REQUEST; an unknown config name, a value outside its rule,
// APPEND/SUBTRACT on a non-list: INVALID_CONFIG naming the key; an unknown
// topic: UNKNOWN_TOPIC_OR_PARTITION.
//
// GROUP (32) and CLIENT_METRICS (16) resources: SET and DELETE, APPEND
// and SUBTRACT on a client-metrics list; the result checked as Kafka's
// GroupConfig (known names, each INT within the group coordinator's
// bounds, a session timeout above its heartbeat interval: INVALID_CONFIG)
// and ClientMetricsConfigs (unknown name or interval.ms outside
// 100–3600000: INVALID_REQUEST; a bad match pattern: INVALID_CONFIG)
// validate them, then stored durably (resource_configs.go).
//
// Brokers: Kafka's dynamic broker configs, per broker (resource name this
// node's id) or as the cluster default (""), SET / DELETE / APPEND /
// SUBTRACT on the stored dynamic values (broker_configs.go).
//
// Deviation: BROKER_LOGGER is not served (INVALID_REQUEST).

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleIncrementalAlterConfigs(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	keys := make([]resourceKey, len(req.Resources))
	for i, rr := range req.Resources {
		keys[i] = resourceKey{rr.ResourceType, rr.ResourceName}
	}
	errs := alterResources(keys, func(i int) error { return b.incrementalAlterResource(req.Resources[i], req.ValidateOnly) })
	for i, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if err := errs[i]; err != nil {
			sr.ErrorCode, sr.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

func (b *Broker) incrementalAlterResource(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	names := make([]string, len(rr.Configs))
	var nulls []string
	for i, c := range rr.Configs {
		names[i] = c.Name
		if c.Op != kmsg.IncrementalAlterConfigOpDelete && c.Value == nil {
			nulls = append(nulls, c.Name)
		}
		if c.Op < kmsg.IncrementalAlterConfigOpSet || c.Op > kmsg.IncrementalAlterConfigOpSubtract {
			return fmt.Errorf("%w: unknown operation type %d", errInvalidRequest, c.Op)
		}
	}
	if err := checkAlterNames(names); err != nil {
		return err
	}
	if len(nulls) > 0 {
		return fmt.Errorf("%w: null value not supported for: %s", errInvalidRequest, strings.Join(nulls, ", "))
	}
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeClientMetrics:
		return b.resourceConfigs.alter(rr.ResourceType, rr.ResourceName, rr.Configs, validateOnly)
	case kmsg.ConfigResourceTypeBroker:
		return b.alterBrokerConfigs(rr.ResourceName, func(cfgs map[string]string) error {
			for _, c := range rr.Configs {
				if err := applyBrokerConfigOp(cfgs, c); err != nil {
					return err
				}
			}
			return nil
		}, validateOnly)
	case kmsg.ConfigResourceTypeTopic:
	default:
		return b.checkNonTopicResource(rr.ResourceType, rr.ResourceName)
	}
	return b.updateTopicConfigs(rr.ResourceName, func(cfgs map[string]string) (map[string]string, error) {
		if cfgs == nil {
			cfgs = map[string]string{}
		}
		for _, c := range rr.Configs {
			if err := applyConfigOp(cfgs, c); err != nil {
				return nil, err
			}
		}
		return cfgs, nil
	}, validateOnly)
}

// applyConfigOp applies one op to a topic's overrides, as Kafka's
// ConfigurationControlManager does.
func applyConfigOp(cfgs map[string]string, c kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	s, known := config.LookupTopic(c.Name)
	switch c.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		cfgs[c.Name] = *c.Value
	case kmsg.IncrementalAlterConfigOpDelete:
		delete(cfgs, c.Name)
	default: // APPEND, SUBTRACT
		if !known {
			return fmt.Errorf("%w: unknown topic config name: %s", errInvalidConfig, c.Name)
		}
		if s.Kind != config.KindList {
			return fmt.Errorf("%w: can't %s to key %s because its type is not LIST", errInvalidConfig, c.Op, c.Name)
		}
		cur, ok := cfgs[c.Name]
		if !ok {
			cur = s.Default
		}
		cfgs[c.Name] = applyListOp(cur, c.Op, *c.Value)
	}
	return nil
}

// applyListOp is IncrementalAlterConfigs' APPEND (values not yet listed
// are added, in order) or SUBTRACT (every occurrence removed) of the
// comma-separated values on the list cur; topic and broker configs share it.
func applyListOp(cur string, op kmsg.IncrementalAlterConfigOp, values string) string {
	parts := config.SplitList(cur)
	for _, v := range strings.Split(values, ",") {
		if op == kmsg.IncrementalAlterConfigOpAppend {
			if !slices.Contains(parts, v) {
				parts = append(parts, v)
			}
		} else {
			parts = slices.DeleteFunc(parts, func(p string) bool { return p == v })
		}
	}
	return strings.Join(parts, ",")
}
