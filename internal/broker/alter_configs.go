package broker

// What AlterConfigs and IncrementalAlterConfigs share: Kafka's checks of
// a request before any resource is altered (ConfigAdminManager.preprocess)
// and the answer for resources other than topics.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// resourceKey names a resource for the duplicate check.
type resourceKey struct {
	kind kmsg.ConfigResourceType
	name string
}

// duplicateResources returns the resources named more than once: Kafka
// refuses each of them (INVALID_REQUEST "Each resource must appear at
// most once.").
func duplicateResources(keys []resourceKey) map[resourceKey]bool {
	seen := map[resourceKey]int{}
	for _, k := range keys {
		seen[k]++
	}
	dup := map[resourceKey]bool{}
	for k, n := range seen {
		if n > 1 {
			dup[k] = true
		}
	}
	return dup
}

// alterResources runs alter on each resource of an AlterConfigs or
// IncrementalAlterConfigs request, except those named more than once, which
// are refused, and returns each resource's error.
func alterResources(keys []resourceKey, alter func(i int) error) []error {
	dup := duplicateResources(keys)
	errs := make([]error, len(keys))
	for i, k := range keys {
		if dup[k] {
			errs[i] = fmt.Errorf("%w: each resource must appear at most once", errInvalidRequest)
		} else {
			errs[i] = alter(i)
		}
	}
	return errs
}

// checkAlterNames refuses a config named twice in one resource, as Kafka
// (INVALID_REQUEST).
func checkAlterNames(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return fmt.Errorf("%w: error due to duplicate config keys (%s)", errInvalidRequest, n)
		}
		seen[n] = true
	}
	return nil
}

// checkNonTopicResource answers a resource no handler alters:
// BROKER_LOGGER and unknown types are INVALID_REQUEST.
func (b *Broker) checkNonTopicResource(kind kmsg.ConfigResourceType, name string) error {
	return fmt.Errorf("%w: resource type %d cannot be altered", errInvalidRequest, kind)
}
