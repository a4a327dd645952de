package config

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
)

// DynamicLayers are the broker settings changed at run time (AlterConfigs
// or IncrementalAlterConfigs on a BROKER resource, Kafka's dynamic broker
// configs): this broker's own (resource name its id) and the cluster
// default (resource name ""). A value is looked up in Broker, then
// Default, then the static settings (Config.Kafka), then the table's
// default, Kafka's order (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
// STATIC_BROKER_CONFIG, DEFAULT_CONFIG). The maps are never changed in
// place: a change installs new layers.
type DynamicLayers struct {
	Broker, Default map[string]string
}

// dynamicRef is shared by every copy of a Config (copied by value): the
// broker installs new layers in it, and every reader sees them.
type dynamicRef struct{ p atomic.Pointer[DynamicLayers] }

// EnableDynamic gives c run-time layers, initially l. Copies of c made
// after this share them.
func (c *Config) EnableDynamic(l DynamicLayers) {
	c.dynamic = &dynamicRef{}
	c.dynamic.p.Store(&l)
}

// SetDynamic installs new layers (EnableDynamic must have been called).
func (c *Config) SetDynamic(l DynamicLayers) { c.dynamic.p.Store(&l) }

// Dynamic returns the current layers (empty without EnableDynamic).
func (c *Config) Dynamic() DynamicLayers {
	if c.dynamic == nil {
		return DynamicLayers{}
	}
	return *c.dynamic.p.Load()
}

// Source says where a broker setting's value comes from.
type Source int

// Sources, in Kafka's order of precedence.
const (
	SourceDefault        Source = 0
	SourceStatic         Source = 1 // start-up: --config, --set, the environment
	SourceDynamicDefault Source = 2 // the cluster default, changed at run time
	SourceDynamicBroker  Source = 3 // this broker's, changed at run time
)

// ValueSource returns a broker setting's value and its source.
func (c *Config) ValueSource(name string) (string, Source) {
	if c.dynamic != nil {
		l := c.dynamic.p.Load()
		if v, ok := l.Broker[name]; ok {
			return v, SourceDynamicBroker
		}
		if v, ok := l.Default[name]; ok {
			return v, SourceDynamicDefault
		}
	}
	if v, ok := c.staticValue(name); ok {
		return v, SourceStatic
	}
	s, _ := Lookup(name)
	return s.Default, SourceDefault
}

// sslReconfigurable are the SSL settings Kafka changes at run time only
// under a listener prefix (SslConfigs.RECONFIGURABLE_CONFIGS).
var sslReconfigurable = []string{"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password",
	"ssl.key.password", "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
	"ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates"}

// CheckDynamic checks a set of broker settings to be changed at run time
// as Kafka's DynamicBrokerConfig.validateConfigs does, for one broker
// (perBroker) or the cluster default: a read-only setting, an SSL store
// setting without a listener prefix, and, for the cluster default, a
// per-broker setting are refused with Kafka's messages; then each value
// is checked against its rule. Deviations: a name no table knows is
// refused (Kafka stores it); the per-broker settings minibroker acts on
// (listeners, advertised.listeners, listener.security.protocol.map, its
// ssl.* and sasl.* settings) and every listener-prefixed one are refused,
// as minibroker opens and secures its listeners only at start-up.
func CheckDynamic(props map[string]string, perBroker bool) error {
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	var unknown, readOnly, unprefixed, perBrokerOnly, startOnly []string
	for _, n := range names {
		if _, _, ok := listenerPrefix(n); ok {
			startOnly = append(startOnly, n)
			continue
		}
		s, ok := Lookup(n)
		switch {
		case !ok:
			unknown = append(unknown, n)
		case s.Dynamic == ReadOnly:
			readOnly = append(readOnly, n)
		case slices.Contains(sslReconfigurable, n):
			unprefixed = append(unprefixed, n)
		case !perBroker && s.Dynamic == DynamicPerBroker:
			perBrokerOnly = append(perBrokerOnly, n)
		case s.Dynamic == DynamicPerBroker && !s.Ignored:
			startOnly = append(startOnly, n)
		}
	}
	switch {
	case len(unknown) > 0:
		return fmt.Errorf("unknown broker config: %s", strings.Join(unknown, ", "))
	case len(readOnly) > 0:
		return fmt.Errorf("Cannot update these configs dynamically: %s", scalaSet(readOnly))
	case len(unprefixed) > 0:
		return fmt.Errorf("These security configs can be dynamically updated only per-listener using the listener prefix: %s", scalaSet(unprefixed))
	case len(perBrokerOnly) > 0:
		return fmt.Errorf("Cannot update these configs at default cluster level, broker id must be specified: %s", scalaSet(perBrokerOnly))
	case len(startOnly) > 0:
		return fmt.Errorf("minibroker opens and secures its listeners at start-up only; set these there: %s", strings.Join(startOnly, ", "))
	}
	for _, n := range names {
		s, _ := Lookup(n)
		if err := s.Validate(n, props[n]); err != nil {
			return err
		}
	}
	return nil
}

// scalaSet prints names as Kafka's messages print a Scala Set.
func scalaSet(names []string) string { return "Set(" + strings.Join(names, ", ") + ")" }
