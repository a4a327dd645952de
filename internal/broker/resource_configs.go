package broker

// GROUP and CLIENT_METRICS config resources: the store behind
// DescribeConfigs, IncrementalAlterConfigs and ListConfigResources for
// Kafka 4's per-group configs (KIP-848, KIP-932, KIP-1071) and client-metrics
// subscriptions (KIP-714). Each resource keeps only its overrides; the
// rest are the defaults below. The group coordinator reads a group's
// effective values with GroupConfigs.
//
// The store is one JSON file in the data dir, rewritten atomically
// (vfs.WriteFileAtomic) on every change that is not validate_only:
//
//	{"version":1,"groups":{"<group>":{"<name>":"<value>",…},…},
//	 "client_metrics":{"<subscription>":{"<name>":"<value>",…},…}}
//
// Deviation: a group config's range is Kafka's default broker bounds
// (group.consumer.min/max.session.timeout.ms …) whatever the broker's
// settings say; client-metrics subscriptions are stored and described
// but do not change what GetTelemetrySubscriptions asks for (nothing
// here would receive the metrics).

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/vfs"
)

const resourceConfigsFile = "config-resources.json"

// resourceConfigDef is one config of a GROUP or CLIENT_METRICS resource.
type resourceConfigDef struct {
	name string
	kind config.Kind
	def  string
	doc  string
	// min and max bound an INT (Kafka's group coordinator bounds).
	min, max int64
	// oneOf lists a STRING's values; valid checks other values.
	oneOf []string
}

// groupConfigDefs are Kafka 4.1's GroupConfig, with the group
// coordinator's default bounds.
var groupConfigDefs = []resourceConfigDef{
	{name: "consumer.heartbeat.interval.ms", kind: config.KindInt, def: "5000", min: 5000, max: 15000,
		doc: "The heartbeat interval given to the members of a consumer group."},
	{name: "consumer.session.timeout.ms", kind: config.KindInt, def: "45000", min: 45000, max: 60000,
		doc: "The timeout to detect client failures when using the consumer group protocol."},
	{name: "share.auto.offset.reset", kind: config.KindString, def: "latest",
		doc: "The strategy to initialize the share-partition start offset: latest, earliest or by_duration:<ISO-8601 duration>."},
	{name: "share.heartbeat.interval.ms", kind: config.KindInt, def: "5000", min: 5000, max: 15000,
		doc: "The heartbeat interval given to the members of a share group."},
	{name: "share.isolation.level", kind: config.KindString, def: "read_uncommitted", oneOf: []string{"read_committed", "read_uncommitted"},
		doc: "Controls how to read records written transactionally, for share groups."},
	{name: "share.record.lock.duration.ms", kind: config.KindInt, def: "30000", min: 15000, max: 60000,
		doc: "The record acquisition lock duration in milliseconds for share groups."},
	{name: "share.session.timeout.ms", kind: config.KindInt, def: "45000", min: 45000, max: 60000,
		doc: "The timeout to detect client failures when using the share group protocol."},
	{name: "streams.heartbeat.interval.ms", kind: config.KindInt, def: "5000", min: 5000, max: 15000,
		doc: "The heartbeat interval given to the members of a streams group."},
	{name: "streams.num.standby.replicas", kind: config.KindInt, def: "0", min: 0, max: 2,
		doc: "The number of standby replicas for each task of a streams group."},
	{name: "streams.session.timeout.ms", kind: config.KindInt, def: "45000", min: 45000, max: 60000,
		doc: "The timeout to detect client failures when using the streams group protocol."},
}

// clientMetricsConfigDefs are Kafka's ClientMetricsConfigs.
var clientMetricsConfigDefs = []resourceConfigDef{
	{name: "interval.ms", kind: config.KindInt, def: "300000", min: 100, max: 3600000,
		doc: "Push interval in milliseconds"},
	{name: "match", kind: config.KindList, def: "",
		doc: "Client match pattern list"},
	{name: "metrics", kind: config.KindList, def: "",
		doc: "Subscription metrics list"},
}

func resourceDefs(kind kmsg.ConfigResourceType) []resourceConfigDef {
	if kind == kmsg.ConfigResourceTypeGroupConfig {
		return groupConfigDefs
	}
	return clientMetricsConfigDefs
}

func lookupResourceDef(kind kmsg.ConfigResourceType, name string) (resourceConfigDef, bool) {
	for _, d := range resourceDefs(kind) {
		if d.name == name {
			return d, true
		}
	}
	return resourceConfigDef{}, false
}

// resourceConfigs holds every GROUP and CLIENT_METRICS resource's
// overrides.
type resourceConfigs struct {
	fs  vfs.FS
	dir string

	// writeMu serializes changes, across the file's write and fsync;
	// readers take only mu. Lock order: writeMu, then mu.
	writeMu sync.Mutex
	mu      sync.RWMutex // guards the maps, replaced whole on a change
	groups  map[string]map[string]string
	metrics map[string]map[string]string
}

type resourceConfigsDoc struct {
	Version       int                          `json:"version"`
	Groups        map[string]map[string]string `json:"groups"`
	ClientMetrics map[string]map[string]string `json:"client_metrics"`
}

// open reads the store (absent: empty).
func (rc *resourceConfigs) open(fs vfs.FS, dir string) error {
	rc.fs, rc.dir = fs, dir
	raw, err := vfs.ReadFile(fs, filepath.Join(dir, resourceConfigsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", resourceConfigsFile, err)
	}
	var doc resourceConfigsDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("parse %s: %w", resourceConfigsFile, err)
	}
	if doc.Version != 1 {
		return fmt.Errorf("%s: unknown version %d", resourceConfigsFile, doc.Version)
	}
	rc.groups, rc.metrics = doc.Groups, doc.ClientMetrics
	return nil
}

func (rc *resourceConfigs) mapLocked(kind kmsg.ConfigResourceType) map[string]map[string]string {
	if kind == kmsg.ConfigResourceTypeGroupConfig {
		return rc.groups
	}
	return rc.metrics
}

// names lists the resources of a kind with overrides, sorted.
func (rc *resourceConfigs) names(kind kmsg.ConfigResourceType) []string {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	var out []string
	for n := range rc.mapLocked(kind) {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// overrides returns a resource's overrides (not to be changed).
func (rc *resourceConfigs) overrides(kind kmsg.ConfigResourceType, name string) map[string]string {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	return rc.mapLocked(kind)[name]
}

// GroupConfigs returns a group's effective Kafka-4 group configs: its
// overrides over the defaults, by Kafka's names
// (consumer.session.timeout.ms, share.auto.offset.reset, …).
func (b *Broker) GroupConfigs(group string) map[string]string {
	out := map[string]string{}
	for _, d := range groupConfigDefs {
		out[d.name] = d.def
	}
	for k, v := range b.resourceConfigs.overrides(kmsg.ConfigResourceTypeGroupConfig, group) {
		out[k] = v
	}
	return out
}

// alter applies IncrementalAlterConfigs ops to one resource, validates
// the result as Kafka does and, unless validateOnly, stores it durably.
func (rc *resourceConfigs) alter(kind kmsg.ConfigResourceType, name string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error {
	if name == "" {
		if kind == kmsg.ConfigResourceTypeGroupConfig {
			return fmt.Errorf("%w: group name must not be empty", errInvalidRequest)
		}
		return fmt.Errorf("%w: Subscription name can't be empty", errInvalidRequest)
	}
	rc.writeMu.Lock()
	defer rc.writeMu.Unlock()
	cur := map[string]string{}
	for k, v := range rc.overrides(kind, name) {
		cur[k] = v
	}
	for _, op := range ops {
		if err := applyResourceOp(kind, cur, op); err != nil {
			return err
		}
	}
	if err := validateResourceConfigs(kind, cur); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	rc.mu.RLock()
	groups, metrics := copyResources(rc.groups), copyResources(rc.metrics)
	rc.mu.RUnlock()
	m := groups
	if kind == kmsg.ConfigResourceTypeClientMetrics {
		m = metrics
	}
	if len(cur) == 0 {
		delete(m, name)
	} else {
		m[name] = cur
	}
	raw, err := json.Marshal(resourceConfigsDoc{Version: 1, Groups: groups, ClientMetrics: metrics})
	if err != nil {
		return err
	}
	if err := vfs.WriteFileAtomic(rc.fs, rc.dir, filepath.Join(rc.dir, resourceConfigsFile), raw); err != nil {
		return fmt.Errorf("write %s: %w", resourceConfigsFile, err)
	}
	rc.mu.Lock()
	rc.groups, rc.metrics = groups, metrics
	rc.mu.Unlock()
	return nil
}

func copyResources(m map[string]map[string]string) map[string]map[string]string {
	out := make(map[string]map[string]string, len(m))
	for k, v := range m {
		out[k] = v // inner maps are never changed in place
	}
	return out
}

// applyResourceOp is one op, as Kafka's ConfigurationControlManager
// applies it: SET and DELETE on any config; APPEND and SUBTRACT on LISTs
// only (INVALID_CONFIG otherwise).
func applyResourceOp(kind kmsg.ConfigResourceType, cfgs map[string]string, op kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	switch op.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		cfgs[op.Name] = *op.Value
		return nil
	case kmsg.IncrementalAlterConfigOpDelete:
		delete(cfgs, op.Name)
		return nil
	}
	d, known := lookupResourceDef(kind, op.Name)
	if !known || d.kind != config.KindList {
		return fmt.Errorf("%w: can't %s to key %s because its type is not LIST", errInvalidConfig, op.Op, op.Name)
	}
	cur, ok := cfgs[op.Name]
	if !ok {
		cur = d.def
	}
	parts := config.SplitList(cur)
	for _, v := range strings.Split(*op.Value, ",") {
		if op.Op == kmsg.IncrementalAlterConfigOpAppend {
			if !slices.Contains(parts, v) {
				parts = append(parts, v)
			}
		} else {
			parts = slices.DeleteFunc(parts, func(p string) bool { return p == v })
		}
	}
	cfgs[op.Name] = strings.Join(parts, ",")
	return nil
}

// validateResourceConfigs checks a resource's overrides as Kafka's
// GroupConfig.validate and ClientMetricsConfigs.validate do.
func validateResourceConfigs(kind kmsg.ConfigResourceType, cfgs map[string]string) error {
	if kind == kmsg.ConfigResourceTypeGroupConfig {
		return validateGroupConfigs(cfgs)
	}
	return validateClientMetricsConfigs(cfgs)
}

func validateGroupConfigs(cfgs map[string]string) error {
	for _, n := range sortedKeys(cfgs) {
		if _, ok := lookupResourceDef(kmsg.ConfigResourceTypeGroupConfig, n); !ok {
			return fmt.Errorf("%w: Unknown group config name: %s", errInvalidConfig, n)
		}
	}
	ints := map[string]int64{}
	for _, d := range groupConfigDefs {
		v, set := cfgs[d.name]
		if !set {
			v = d.def
		}
		switch d.kind {
		case config.KindInt:
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return fmt.Errorf("%w: Invalid value %s for configuration %s: Not a number of type INT", errInvalidConfig, v, d.name)
			}
			if n < d.min {
				return fmt.Errorf("%w: %s must be greater than or equal to %d", errInvalidConfig, d.name, d.min)
			}
			if n > d.max {
				return fmt.Errorf("%w: %s must be less than or equal to %d", errInvalidConfig, d.name, d.max)
			}
			ints[d.name] = n
		case config.KindString:
			if d.oneOf != nil && !slices.Contains(d.oneOf, v) {
				return fmt.Errorf("%w: Invalid value %s for configuration %s: String must be one of: %s",
					errInvalidConfig, v, d.name, strings.Join(d.oneOf, ", "))
			}
			if d.name == "share.auto.offset.reset" && !validShareAutoOffsetReset(v) {
				return fmt.Errorf("%w: Invalid value %s for configuration %s: must be latest, earliest or by_duration:<ISO-8601 duration>",
					errInvalidConfig, v, d.name)
			}
		}
	}
	for _, p := range []string{"consumer", "share", "streams"} {
		if ints[p+".session.timeout.ms"] <= ints[p+".heartbeat.interval.ms"] {
			return fmt.Errorf("%w: %s.session.timeout.ms must be greater than %s.heartbeat.interval.ms", errInvalidConfig, p, p)
		}
	}
	return nil
}

// isoDuration is the ISO-8601 duration Java's Duration.parse accepts:
// PnDTnHnMn.nS, with an optional sign.
var isoDuration = regexp.MustCompile(`^[-+]?P(?:[-+]?[0-9]+D)?(?:T(?:[-+]?[0-9]+H)?(?:[-+]?[0-9]+M)?(?:[-+]?[0-9]+(?:[.,][0-9]{0,9})?S)?)?$`)

func validShareAutoOffsetReset(v string) bool {
	switch v {
	case "latest", "earliest":
		return true
	}
	_, ok := shareResetDuration(v)
	return ok
}

// shareResetDuration is the duration of a share.auto.offset.reset
// by_duration:<ISO-8601 duration>, refused when malformed or negative.
func shareResetDuration(v string) (time.Duration, bool) {
	d, ok := strings.CutPrefix(v, "by_duration:")
	if !ok || !isoDuration.MatchString(d) || d == "P" || strings.HasSuffix(d, "T") {
		return 0, false
	}
	return parseISODuration(d)
}

// parseISODuration reads what isoDuration matched: days are 24 hours,
// each part may carry its own sign, and a leading sign negates the
// whole (Java's Duration.parse). It is not ok when negative or beyond
// time.Duration's range.
func parseISODuration(s string) (time.Duration, bool) {
	neg := false
	switch s[0] {
	case '-':
		neg, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	s = s[1:] // P
	unit := map[byte]time.Duration{'D': 24 * time.Hour, 'H': time.Hour, 'M': time.Minute}
	var total float64
	num := ""
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == 'T':
		case ch == 'D' || ch == 'H' || ch == 'M' || ch == 'S':
			n, err := strconv.ParseFloat(strings.Replace(num, ",", ".", 1), 64)
			if err != nil {
				return 0, false
			}
			u := time.Second
			if ch != 'S' {
				u = unit[ch]
			}
			total += n * float64(u)
			num = ""
		default:
			num += string(ch)
		}
	}
	if neg {
		total = -total
	}
	if total < 0 || total > float64(math.MaxInt64) {
		return 0, false
	}
	return time.Duration(total), true
}

// clientMetricsMatchParams are the client properties a match pattern
// may test (Kafka's ClientMetricsConfigs.ALLOWED_MATCH_PARAMS).
var clientMetricsMatchParams = []string{"client_instance_id", "client_id", "client_software_name",
	"client_software_version", "client_source_address", "client_source_port"}

func validateClientMetricsConfigs(cfgs map[string]string) error {
	for _, n := range sortedKeys(cfgs) {
		if _, ok := lookupResourceDef(kmsg.ConfigResourceTypeClientMetrics, n); !ok {
			return fmt.Errorf("%w: Unknown client metrics configuration: %s", errInvalidRequest, n)
		}
	}
	if v, ok := cfgs["interval.ms"]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return fmt.Errorf("%w: Invalid value %s for configuration interval.ms: Not a number of type INT", errInvalidConfig, v)
		}
		if n < 100 || n > 3600000 {
			return fmt.Errorf("%w: Invalid value %d for interval.ms, interval must be between 100 and 3600000 (1 hour)", errInvalidRequest, n)
		}
	}
	if v, ok := cfgs["match"]; ok {
		for _, p := range config.SplitList(v) {
			kv := strings.Split(p, "=")
			if len(kv) != 2 || !slices.Contains(clientMetricsMatchParams, strings.TrimSpace(kv[0])) {
				return fmt.Errorf("%w: Illegal client matching pattern: %s", errInvalidConfig, p)
			}
			if _, err := regexp.Compile(strings.TrimSpace(kv[1])); err != nil {
				return fmt.Errorf("%w: Illegal client matching pattern: %s", errInvalidConfig, p)
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// describeResource answers DescribeConfigs for a GROUP or CLIENT_METRICS
// resource: every config, GROUP_CONFIG or CLIENT_METRICS_CONFIG for an
// override, DEFAULT_CONFIG otherwise, none read-only or sensitive.
func (b *Broker) describeResource(rr kmsg.DescribeConfigsRequestResource, version int16) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if rr.ResourceName == "" {
		return nil, fmt.Errorf("%w: resource name must not be empty", errInvalidRequest)
	}
	overrides := b.resourceConfigs.overrides(rr.ResourceType, rr.ResourceName)
	src := kmsg.ConfigSourceGroupConfig
	if rr.ResourceType == kmsg.ConfigResourceTypeClientMetrics {
		src = kmsg.ConfigSourceClientMetricsConfig
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, d := range resourceDefs(rr.ResourceType) {
		if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, d.name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		v, set := overrides[d.name]
		if !set {
			v = d.def
		}
		c.Name, c.Value = d.name, &v
		c.Source, c.IsDefault = kmsg.ConfigSourceDefaultConfig, !set
		if set {
			c.Source = src
		}
		c.ConfigType = configType(d.kind)
		if version >= 3 {
			doc := d.doc
			c.Documentation = &doc
		}
		out = append(out, c)
	}
	return out, nil
}
