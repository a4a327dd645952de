package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Kind is a setting's value type, as Kafka's ConfigDef.Type.
type Kind int

// Kinds. The numbers are not stored anywhere.
const (
	KindInt      Kind = 1 // Kafka INT: a 32-bit integer
	KindBool     Kind = 2 // Kafka BOOLEAN: true or false, any case
	KindString   Kind = 3 // Kafka STRING
	KindLong     Kind = 4 // Kafka LONG: a 64-bit integer
	KindList     Kind = 5 // Kafka LIST: comma-separated strings
	KindDouble   Kind = 6 // Kafka DOUBLE
	KindPassword Kind = 7 // Kafka PASSWORD: a string never shown (DescribeConfigs answers null)
	KindShort    Kind = 8 // Kafka SHORT: a 16-bit integer
	KindClass    Kind = 9 // Kafka CLASS: a Java class name (kept as a string; minibroker loads no class)
)

// noMin is the Min of a numeric setting Kafka gives no lower bound.
const noMin = math.MinInt64

// Dynamic is how Kafka's DynamicBrokerConfig lets a broker setting change
// at run time (its documentation's "update mode").
type Dynamic int

// Update modes.
const (
	ReadOnly           Dynamic = 0 // read-only: set at start-up only
	DynamicPerBroker   Dynamic = 1 // per-broker: on one broker (resource name its id), not as the cluster default
	DynamicClusterWide Dynamic = 2 // cluster-wide: on one broker or as the cluster default (resource name "")
)

// String is the update mode as Kafka's documentation names it.
func (d Dynamic) String() string {
	switch d {
	case DynamicPerBroker:
		return "per-broker"
	case DynamicClusterWide:
		return "cluster-wide"
	}
	return "read-only"
}

// String is Kafka's name of the type, as its errors and docs print it.
func (k Kind) String() string {
	switch k {
	case KindInt:
		return "INT"
	case KindBool:
		return "BOOLEAN"
	case KindString:
		return "STRING"
	case KindLong:
		return "LONG"
	case KindList:
		return "LIST"
	case KindDouble:
		return "DOUBLE"
	case KindPassword:
		return "PASSWORD"
	case KindShort:
		return "SHORT"
	case KindClass:
		return "CLASS"
	}
	return "UNKNOWN"
}

// Setting is one row of the settings table (settings.go).
type Setting struct {
	// Name is the broker setting ("" for a topic-only config).
	Name string
	// Topic is the topic-level config this broker setting is the default
	// for (Kafka's log.retention.ms → retention.ms), if any.
	Topic   string
	Kind    Kind
	Default string
	// Min and Max bound an INT, LONG or DOUBLE; Min is always checked,
	// Max 0 means the type's own limit.
	Min, Max int64
	// OneOf lists the allowed values of a STRING, or of each element of a
	// LIST (case-sensitive, as Kafka's ValidString and ValidList).
	OneOf []string
	Doc   string
	// Check validates a value beyond the rules above, if set.
	Check func(string) error
	// Listener: a listener may override it (listener.name.<name>.<setting>).
	Listener bool
	// Ignored: accepted and checked as Kafka checks it, not acted on (a
	// Kafka setting that means nothing on one node); start-up logs the
	// ones set, and docs/SETTINGS.md lists them all.
	Ignored bool
	// Dynamic is Kafka's update mode for a broker setting.
	Dynamic Dynamic
	// Internal: Kafka defines it with defineInternal (accepted, not in
	// Kafka's documentation).
	Internal bool
	// From names the Kafka class whose ConfigDef defines the setting
	// ("" for minibroker's own).
	From string
}

// InvalidValueError is a value a setting's rule refuses. Its text names
// the setting, the value and the rule, as Kafka's ConfigException does.
type InvalidValueError struct {
	Name, Value, Rule string
}

func (e *InvalidValueError) Error() string {
	return fmt.Sprintf("invalid value %q for configuration %s: %s", e.Value, e.Name, e.Rule)
}

// Validate checks v against the setting's type and rules; name is the
// name it was given under (the broker or the topic-level one).
func (s Setting) Validate(name, v string) error {
	if rule := s.rule(strings.TrimSpace(v)); rule != "" {
		if s.Sensitive() {
			v = "[hidden]"
		}
		return &InvalidValueError{Name: name, Value: v, Rule: rule}
	}
	return nil
}

// rule returns the rule v breaks, or "".
func (s Setting) rule(v string) string {
	switch s.Kind {
	case KindInt, KindLong, KindShort:
		bits, limit := 64, int64(math.MaxInt64)
		switch s.Kind {
		case KindInt:
			bits, limit = 32, math.MaxInt32
		case KindShort:
			bits, limit = 16, math.MaxInt16
		}
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return "not a number of type " + s.Kind.String()
		}
		if s.Max != 0 {
			limit = s.Max
		}
		if n < s.Min {
			return fmt.Sprintf("value must be at least %d", s.Min)
		}
		if n > limit {
			return fmt.Sprintf("value must be no more than %d", limit)
		}
	case KindDouble:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return "not a number of type DOUBLE"
		}
		if f < float64(s.Min) || (s.Max != 0 && f > float64(s.Max)) {
			if s.Max == 0 {
				return fmt.Sprintf("value must be at least %d", s.Min)
			}
			return fmt.Sprintf("value must be between %d and %d", s.Min, s.Max)
		}
	case KindBool:
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return "expected value to be either true or false"
		}
	case KindString, KindClass:
		if len(s.OneOf) > 0 && !slices.Contains(s.OneOf, v) {
			return "string must be one of: " + strings.Join(s.OneOf, ", ")
		}
	case KindList:
		if len(s.OneOf) > 0 {
			for _, e := range SplitList(v) {
				if !slices.Contains(s.OneOf, e) {
					return fmt.Sprintf("invalid value %s: must be one of: %s", e, strings.Join(s.OneOf, ", "))
				}
			}
		}
	}
	if s.Check != nil {
		if err := s.Check(v); err != nil {
			return err.Error()
		}
	}
	return ""
}

// SplitList splits a LIST value as Kafka does: at commas, each element
// trimmed, an empty value an empty list.
func SplitList(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// Sensitive reports whether the value must never be shown.
func (s Setting) Sensitive() bool { return s.Kind == KindPassword }

// Lookup finds a broker setting by name.
func Lookup(name string) (Setting, bool) {
	if i, ok := byName[name]; ok {
		return settings[i], true
	}
	return Setting{}, false
}

// LookupTopic finds a topic-level config by name.
func LookupTopic(name string) (Setting, bool) {
	if i, ok := byTopic[name]; ok {
		return settings[i], true
	}
	return Setting{}, false
}

// ValidateTopicConfig checks one topic-level config: an unknown name or a
// value its rule refuses is an error naming the key.
func ValidateTopicConfig(name, value string) error {
	s, ok := LookupTopic(name)
	if !ok {
		return fmt.Errorf("unknown topic config name: %s", name)
	}
	return s.Validate(name, value)
}

// TopicSettings returns the rows that have a topic-level name, in table
// order.
func TopicSettings() []Setting {
	var out []Setting
	for _, s := range settings {
		if s.Topic != "" {
			out = append(out, s)
		}
	}
	return out
}

func checkConnectionOverrides(v string) error {
	_, err := ParseConnectionOverrides(v)
	return err
}

// ParseConnectionOverrides parses max.connections.per.ip.overrides as
// Kafka's Csv.parseCsvMap does: entries split at commas (spaces around
// them ignored), each split at its last colon (so an IPv6 address may be
// a key), key and count trimmed; the count must be an integer. The keys
// are host names or IP addresses, resolved by the caller.
func ParseConnectionOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		i := strings.LastIndex(entry, ":")
		if i < 0 {
			return nil, fmt.Errorf("override %q: want host:count", entry)
		}
		host := strings.TrimSpace(entry[:i])
		n, err := strconv.ParseInt(strings.TrimSpace(entry[i+1:]), 10, 32)
		if err != nil || host == "" {
			return nil, fmt.Errorf("override %q: want host:count", entry)
		}
		out[host] = int(n)
	}
	return out, nil
}

const maxLong = "9223372036854775807"
