package config

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Security protocols, as Kafka's SecurityProtocol names them.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// ListenerSpec is one Kafka listener: its name (upper case, as Kafka's
// ListenerName normalises it), security protocol, the address it binds and
// the address it advertises.
type ListenerSpec struct {
	Name     string
	Protocol string
	// Addr is host:port to bind; an empty host binds every interface.
	Addr string
	// Advertised is the host:port Metadata, FindCoordinator and
	// DescribeCluster give to clients that connected through this
	// listener; "" advertises the bound address.
	Advertised string
}

// UsesTLS reports whether the listener speaks TLS (SSL, SASL_SSL).
func (l ListenerSpec) UsesTLS() bool { return l.Protocol == SSL || l.Protocol == SASLSSL }

// UsesSASL reports whether clients authenticate with SASL.
func (l ListenerSpec) UsesSASL() bool { return l.Protocol == SASLPlaintext || l.Protocol == SASLSSL }

// defaultProtocolMap is listener.security.protocol.map's default: each
// security protocol is a listener name of its own.
const defaultProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

var listenerNameRE = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// ParseProtocolMap parses listener.security.protocol.map
// ("NAME:PROTOCOL,…"); names are upper-cased.
func ParseProtocolMap(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, entry := range splitList(v) {
		name, proto, ok := strings.Cut(entry, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || !listenerNameRE.MatchString(name) {
			return nil, fmt.Errorf("entry %q: want NAME:PROTOCOL", entry)
		}
		if !slices.Contains([]string{Plaintext, SSL, SASLPlaintext, SASLSSL}, proto) {
			return nil, fmt.Errorf("entry %q: unknown security protocol %q (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", entry, proto)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("listener name %s mapped twice", name)
		}
		out[name] = proto
	}
	return out, nil
}

// parseListenerList parses listeners or advertised.listeners:
// "NAME://host:port,…" (host may be empty or a bracketed IPv6 address).
func parseListenerList(v string) ([][2]string, error) {
	var out [][2]string
	for _, entry := range splitList(v) {
		name, addr, ok := strings.Cut(entry, "://")
		name = strings.ToUpper(strings.TrimSpace(name))
		if !ok || !listenerNameRE.MatchString(name) {
			return nil, fmt.Errorf("listener %q: want NAME://host:port", entry)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("listener %q: %w", entry, err)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("listener %q: bad port", entry)
		}
		for _, seen := range out {
			if seen[0] == name {
				return nil, fmt.Errorf("listener name %s appears twice", name)
			}
		}
		out = append(out, [2]string{name, net.JoinHostPort(host, port)})
	}
	return out, nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func checkListenerList(v string) error {
	_, err := parseListenerList(v)
	return err
}

func checkProtocolMap(v string) error {
	_, err := ParseProtocolMap(v)
	return err
}

// Listeners returns the listeners to open. With `listeners` set, each of
// its entries, its protocol from listener.security.protocol.map (a name
// not in the map is an error, as in Kafka) and its advertised address from
// advertised.listeners (a listener left out of it advertises its bound
// address: Kafka would leave it out of Metadata); a listener named in
// controller.listener.names (Kafka's KRaft controller listener) is not
// opened. Without `listeners`, the
// one PLAINTEXT listener of Listen / AdvertisedListener (the --listen and
// --advertised-listener shorthand).
func (c *Config) Listeners() ([]ListenerSpec, error) {
	raw := c.String("listeners")
	if strings.TrimSpace(raw) == "" {
		return []ListenerSpec{{Name: Plaintext, Protocol: Plaintext, Addr: c.Listen, Advertised: c.AdvertisedListener}}, nil
	}
	protos, err := ParseProtocolMap(c.String("listener.security.protocol.map"))
	if err != nil {
		return nil, fmt.Errorf("listener.security.protocol.map: %w", err)
	}
	list, err := parseListenerList(raw)
	if err != nil {
		return nil, fmt.Errorf("listeners: %w", err)
	}
	adv, err := parseListenerList(c.String("advertised.listeners"))
	if err != nil {
		return nil, fmt.Errorf("advertised.listeners: %w", err)
	}
	controllers := map[string]bool{}
	for _, n := range splitList(c.String("controller.listener.names")) {
		controllers[strings.ToUpper(n)] = true
	}
	var out []ListenerSpec
	ports := map[string]string{}
	for _, l := range list {
		if controllers[l[0]] {
			continue // a KRaft controller listener: one node has no quorum to serve
		}
		proto, ok := protos[l[0]]
		if !ok {
			return nil, fmt.Errorf("listeners: listener %s is not in listener.security.protocol.map", l[0])
		}
		if _, port, _ := net.SplitHostPort(l[1]); port != "0" {
			if other, dup := ports[port]; dup {
				return nil, fmt.Errorf("listeners: %s and %s use port %s", other, l[0], port)
			}
			ports[port] = l[0]
		}
		out = append(out, ListenerSpec{Name: l[0], Protocol: proto, Addr: l[1]})
	}
	for _, a := range adv {
		i := slices.IndexFunc(out, func(l ListenerSpec) bool { return l.Name == a[0] })
		if i < 0 {
			return nil, fmt.Errorf("advertised.listeners: %s is not in listeners", a[0])
		}
		if host, _, _ := net.SplitHostPort(a[1]); host == "0.0.0.0" || host == "::" {
			return nil, fmt.Errorf("advertised.listeners: %s advertises the meta-address %s", a[0], host)
		}
		out[i].Advertised = a[1]
	}
	return out, nil
}

// listenerScoped are the settings a listener may override with
// listener.name.<name>.<setting>, as Kafka's listener prefix allows.
var listenerScoped = map[string]bool{}

// jaasRE matches <mechanism>.sasl.jaas.config, the JAAS setting of one
// SASL mechanism (always listener-prefixed in a broker's config).
var jaasRE = regexp.MustCompile(`^([a-z0-9-]+)\.sasl\.jaas\.config$`)

// listenerPrefix splits listener.name.<name>.<rest>; name is returned
// lower-cased (Kafka's ListenerName.configPrefix).
func listenerPrefix(key string) (listener, rest string, ok bool) {
	after, ok := strings.CutPrefix(key, "listener.name.")
	if !ok {
		return "", "", false
	}
	listener, rest, ok = strings.Cut(after, ".")
	if !ok || !listenerNameRE.MatchString(listener) || rest == "" {
		return "", "", false
	}
	return strings.ToLower(listener), rest, true
}

// checkListenerScoped checks listener.name.<name>.<rest>=value: rest is a
// setting a listener may override, or <mechanism>.sasl.jaas.config.
func checkListenerScoped(listener, rest, value string) error {
	key := "listener.name." + listener + "." + rest
	if jaasRE.MatchString(rest) {
		if err := checkJAASSyntax(value); err != nil {
			return fmt.Errorf("invalid value [hidden] for configuration %s: %w", key, err)
		}
		return nil
	}
	def, ok := Lookup(rest)
	if !ok || !listenerScoped[rest] {
		return fmt.Errorf("unknown listener setting %q (a listener may override: %s, <mechanism>.sasl.jaas.config)",
			key, strings.Join(ListenerScopedNames(), ", "))
	}
	return def.Validate(key, value)
}

// ListenerScopedNames lists the settings a listener may override.
func ListenerScopedNames() []string {
	var out []string
	for n := range listenerScoped {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ListenerString returns a listener's value of a listener-scoped setting:
// its listener.name.<name>. override, else the broker-wide value, else the
// default.
func (c *Config) ListenerString(listener, name string) string {
	if v, ok := c.Kafka["listener.name."+strings.ToLower(listener)+"."+name]; ok {
		return v
	}
	return c.String(name)
}

// ListenerInt64 is ListenerString for a numeric setting.
func (c *Config) ListenerInt64(listener, name string) int64 {
	v, _ := strconv.ParseInt(c.ListenerString(listener, name), 10, 64)
	return v
}

// JAAS returns listener.name.<listener>.<mechanism>.sasl.jaas.config.
func (c *Config) JAAS(listener, mechanism string) (string, bool) {
	v, ok := c.Kafka["listener.name."+strings.ToLower(listener)+"."+strings.ToLower(mechanism)+".sasl.jaas.config"]
	return v, ok
}

// IsSensitive reports whether a setting's value is a secret: never
// logged, shown as null by DescribeConfigs (Kafka's PASSWORD type).
func IsSensitive(name string) bool {
	if _, rest, ok := listenerPrefix(name); ok {
		name = rest
	}
	if jaasRE.MatchString(name) {
		return true
	}
	def, ok := Lookup(name)
	return ok && def.Sensitive()
}
