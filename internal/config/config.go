// Package config holds the broker's settings: the operator's own (data dir,
// listeners, identity, logging) and the Kafka-named ones (log.segment.bytes,
// num.partitions, …), with Kafka's defaults, read from flags, a YAML file
// and repeated --set key=value.
package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Config is everything `minibroker serve` needs.
type Config struct {
	DataDir            string            `yaml:"data-dir"`
	Listen             string            `yaml:"listen"`
	AdvertisedListener string            `yaml:"advertised-listener"`
	HTTPListen         string            `yaml:"http-listen"`
	ClusterID          string            `yaml:"cluster-id"`
	NodeID             int32             `yaml:"node-id"`
	LogLevel           string            `yaml:"log-level"`
	LogFormat          string            `yaml:"log-format"`
	Kafka              map[string]string `yaml:"-"` // read from the file's kafka: section
	// Mirrors are declared statically: created at start-up if missing,
	// and their topics started once the source answers.
	Mirrors []StaticMirror `yaml:"mirrors"`

	// dynamic holds the broker settings changed at run time (dynamic.go),
	// shared by the copies of this Config; nil: none.
	dynamic *dynamicRef
}

// StaticMirror is a mirror declared in the config file.
type StaticMirror struct {
	Name     string   `yaml:"name"`
	Source   []string `yaml:"source"`
	ClientID string   `yaml:"client-id"`
	// Topics are started once the source answers; none: every source
	// topic mirror.topics.include selects (in MirrorConfig).
	Topics        []string `yaml:"topics"`
	GroupsInclude []string `yaml:"groups-include"`
	GroupsExclude []string `yaml:"groups-exclude"`
	// MirrorConfig is the mirror's settings by KIP-1279's names
	// (mirror.topics.include, mirror.metadata.refresh.interval.ms, …;
	// docs/MIRRORING.md). The file's are the mirror's: at start-up they
	// replace a known mirror's values for the settings the file names.
	MirrorConfig map[string]string `yaml:"mirror-config"`
	// SourceConfig is the source client's security settings by Kafka's
	// client names (security.protocol, sasl.mechanism, sasl.jaas.config,
	// ssl.truststore.location, …); SourceConfigFile names a Java
	// .properties file of them, read first (SourceConfig's keys win).
	SourceConfig     map[string]string `yaml:"source-config"`
	SourceConfigFile string            `yaml:"source-config-file"`
}

// SourceSettings merges the mirror's source-config-file and source-config.
func (sm StaticMirror) SourceSettings() (map[string]string, error) {
	out := map[string]string{}
	if sm.SourceConfigFile != "" {
		props, err := ReadPropertiesFile(sm.SourceConfigFile)
		if err != nil {
			return nil, fmt.Errorf("mirror %s: source-config-file: %w", sm.Name, err)
		}
		out = props
	}
	for k, v := range sm.SourceConfig {
		out[k] = v
	}
	return out, nil
}

// Default returns the embedded defaults `make run` uses.
func Default() Config {
	return Config{
		DataDir:    "./data",
		Listen:     "127.0.0.1:9092",
		HTTPListen: "127.0.0.1:9644",
		NodeID:     0,
		LogLevel:   "info",
		LogFormat:  "console",
		Kafka:      map[string]string{},
	}
}

// LoadFile merges a YAML file over c.
func (c *Config) LoadFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	var f struct {
		Config `yaml:",inline"`
		Kafka  map[string]any `yaml:"kafka"`
	}
	f.Config = *c
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return fmt.Errorf("config: %s: %w", path, err)
	}
	kafka := c.Kafka
	*c = f.Config
	c.Kafka = kafka
	for k, v := range f.Kafka {
		if err := c.Set(k, fmt.Sprint(v)); err != nil {
			return fmt.Errorf("config: %s: %w", path, err)
		}
	}
	return nil
}

// Set records a Kafka-named setting after checking its name and value
// against the settings table; the error names the key, the value and the
// rule.
func (c *Config) Set(name, value string) error {
	value = strings.TrimSpace(value)
	if err := checkSetting(name, value); err != nil {
		return err
	}
	if listener, rest, ok := listenerPrefix(name); ok {
		name = "listener.name." + listener + "." + rest // Kafka's prefix is lower case
	}
	if c.Kafka == nil {
		c.Kafka = map[string]string{}
	}
	c.Kafka[name] = value
	return nil
}

func checkSetting(name, value string) error {
	if listener, rest, ok := listenerPrefix(name); ok {
		return checkListenerScoped(listener, rest, value)
	}
	def, ok := Lookup(name)
	if !ok {
		return &UnknownSettingError{Name: name}
	}
	return def.Validate(name, value)
}

// UnknownSettingError is a name neither Kafka's broker ConfigDef nor
// minibroker defines.
type UnknownSettingError struct{ Name string }

func (e *UnknownSettingError) Error() string {
	return fmt.Sprintf("unknown setting %q (not a Kafka broker setting nor a minibroker one; docs/SETTINGS.md lists them)", e.Name)
}

// SetLenient sets each of props as Set does, in name order, except that a
// name no table knows is skipped and returned rather than refused: Kafka
// itself only warns about unknown names in server.properties and in its
// image's KAFKA_* variables, so files and environments written for Kafka
// carry some (plug-in settings, KAFKA_JMX_PORT, …). A known name with a
// bad value is an error.
func (c *Config) SetLenient(props map[string]string) (unknown []string, err error) {
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		err := c.Set(k, props[k])
		var u *UnknownSettingError
		switch {
		case errors.As(err, &u):
			unknown = append(unknown, k)
		case err != nil:
			return unknown, err
		}
	}
	return unknown, nil
}

// LoadProperties merges a Kafka server.properties file over c
// (SetLenient's rules: unknown names are returned).
func (c *Config) LoadProperties(path string) (unknown []string, err error) {
	props, err := ReadPropertiesFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	unknown, err = c.SetLenient(props)
	if err != nil {
		return unknown, fmt.Errorf("config: %s: %w", path, err)
	}
	return unknown, nil
}

// Validate checks the whole configuration as start-up does, whoever built
// it (flags, file, --set, or a Go caller filling Kafka directly): every
// Kafka-named setting against the settings table, and the node id (Kafka
// in KRaft mode requires node.id >= 0). The first problem is returned,
// naming the key, the value and the rule.
func (c *Config) Validate() error {
	if c.NodeID < 0 {
		return fmt.Errorf("invalid value %d for --node-id (node.id): value must be at least 0", c.NodeID)
	}
	names := make([]string, 0, len(c.Kafka))
	for k := range c.Kafka {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := checkSetting(k, c.Kafka[k]); err != nil {
			return err
		}
	}
	return nil
}

// SetPair parses "key=value".
func (c *Config) SetPair(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("--set %q: want key=value", kv)
	}
	return c.Set(strings.TrimSpace(k), strings.TrimSpace(v))
}

// String returns a setting's value, or its default.
func (c *Config) String(name string) string {
	if v, ok := c.Value(name); ok {
		return v
	}
	def, ok := Lookup(name)
	if !ok {
		panic("config: unknown setting " + name) // programming error, not input
	}
	return def.Default
}

// Value returns a setting's value and true when it is set: changed at
// run time (dynamic.go), or set at start-up by its own name or, as Kafka
// derives it, by a synonym in other units (log.retention.hours for
// log.retention.ms, …).
func (c *Config) Value(name string) (string, bool) {
	if c.dynamic != nil {
		l := c.dynamic.p.Load()
		if v, ok := l.Broker[name]; ok {
			return v, true
		}
		if v, ok := l.Default[name]; ok {
			return v, true
		}
	}
	return c.staticValue(name)
}

// staticValue is Value without the run-time layers.
func (c *Config) staticValue(name string) (string, bool) {
	if v, ok := c.Kafka[name]; ok {
		return v, true
	}
	for _, syn := range unitSynonyms[name] {
		v, ok := c.Kafka[syn.name]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue // Validate refuses it
		}
		if n < 0 {
			return "-1", true // Kafka: a negative retention is unlimited
		}
		if n > math.MaxInt64/syn.scale {
			return strconv.FormatInt(math.MaxInt64, 10), true
		}
		return strconv.FormatInt(n*syn.scale, 10), true
	}
	return "", false
}

// unitSynonyms are the settings Kafka derives from others in other units
// when they are not set themselves, in Kafka's order of precedence
// (KafkaConfig.logRetentionTimeMillis, logRollTimeMillis,
// GroupCoordinatorConfig.offsetsRetentionMs).
var unitSynonyms = map[string][]struct {
	name  string
	scale int64
}{
	"log.retention.ms":     {{"log.retention.minutes", 60_000}, {"log.retention.hours", 3_600_000}},
	"log.roll.ms":          {{"log.roll.hours", 3_600_000}},
	"offsets.retention.ms": {{"offsets.retention.minutes", 60_000}},
}

// Int64 returns a numeric setting.
func (c *Config) Int64(name string) int64 {
	v, _ := strconv.ParseInt(strings.TrimSpace(c.String(name)), 10, 64)
	return v
}

// Int32 returns a numeric setting. Validate has refused values outside an
// INT setting's range; the clamp only guards a LONG read as an int32.
func (c *Config) Int32(name string) int32 {
	v := c.Int64(name)
	return int32(max(min(v, math.MaxInt32), math.MinInt32))
}

// Bool returns a boolean setting ("true" in any case, as Kafka).
func (c *Config) Bool(name string) bool {
	return strings.EqualFold(strings.TrimSpace(c.String(name)), "true")
}

// Names lists every Kafka-named broker setting minibroker accepts.
func Names() []string {
	out := make([]string, 0, len(settings))
	for _, s := range settings {
		if s.Name != "" {
			out = append(out, s.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Settings returns the broker settings of the table, in table order.
func Settings() []Setting {
	out := make([]Setting, 0, len(settings))
	for _, s := range settings {
		if s.Name != "" {
			out = append(out, s)
		}
	}
	return out
}

// ApplyKafkaIdentity takes the node id and the data directory from Kafka's
// settings when they are set: node.id (or its older name broker.id; both
// set, they must match, as Kafka requires) replaces NodeID, and log.dirs
// (else log.dir) replaces DataDir. minibroker keeps one data directory, so
// a log.dirs of more than one is refused. A node id of -1 (Kafka's
// default) is "not set".
func (c *Config) ApplyKafkaIdentity() error {
	var ids []int64
	for _, name := range []string{"node.id", "broker.id"} {
		if v, ok := c.Kafka[name]; ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err == nil && n != -1 {
				ids = append(ids, n)
			}
		}
	}
	if len(ids) == 2 && ids[0] != ids[1] {
		return fmt.Errorf("node.id %d and broker.id %d differ: set one, or both to the same id", ids[0], ids[1])
	}
	if len(ids) > 0 {
		c.NodeID = int32(ids[0])
	}
	for _, name := range []string{"log.dirs", "log.dir"} {
		v, ok := c.Kafka[name]
		if !ok {
			continue
		}
		dirs := SplitList(v)
		if len(dirs) != 1 || dirs[0] == "" {
			return fmt.Errorf("invalid value %q for configuration %s: minibroker keeps one data directory", v, name)
		}
		c.DataDir = dirs[0]
		break
	}
	return nil
}

// IgnoredSet lists the settings set (in Kafka) that minibroker accepts and
// ignores, sorted.
func (c *Config) IgnoredSet() []string {
	var out []string
	for name := range c.Kafka {
		if s, ok := Lookup(name); ok && s.Ignored {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
