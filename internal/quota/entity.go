// Package quota is minibroker's client quotas (KIP-13, KIP-55, KIP-124,
// KIP-257, KIP-546, KIP-599, KIP-612): the entities and their values as
// DescribeClientQuotas / AlterClientQuotas see them, kept durably in the
// data directory, and the sensors that turn what a client does into a
// throttle time, with Kafka's arithmetic (ClientQuotaManager,
// ClientRequestQuotaManager, ControllerMutationQuotaManager,
// ConnectionQuotas). It knows nothing of the wire: the broker records
// what requests cost and puts the throttle in their responses; the
// protocol package mutes the channel.
package quota

import (
	"net"
	"strings"
)

// Entity types, Kafka's names.
const (
	TypeUser     = "user"
	TypeClientID = "client-id"
	TypeIP       = "ip"
)

// Quota keys, Kafka's names.
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
	ConnectionCreationRate = "connection_creation_rate"
)

// keyKind is a quota key's ConfigDef type (QuotaConfig): integral keys
// refuse fractions and values past their type's range.
type keyKind int

const (
	kindLong keyKind = iota
	kindInt
	kindDouble
)

// userClientKeys are the keys of user and client-id entities, ipKeys of
// ip entities (QuotaConfig.userAndClientQuotaConfigs / ipConfigs).
var (
	userClientKeys = map[string]keyKind{
		ProducerByteRate:       kindLong,
		ConsumerByteRate:       kindLong,
		RequestPercentage:      kindDouble,
		ControllerMutationRate: kindDouble,
	}
	ipKeys = map[string]keyKind{ConnectionCreationRate: kindInt}
)

// Name is one component of an entity: absent, the default (<default>,
// a null name on the wire) or a name.
type Name struct {
	Set     bool
	Default bool
	Value   string
}

// Named is the component for name, Default the default one.
func Named(name string) Name { return Name{Set: true, Value: name} }

// DefaultName is the <default> component.
var DefaultName = Name{Set: true, Default: true}

func (n Name) String() string {
	switch {
	case !n.Set:
		return ""
	case n.Default:
		return "<default>"
	}
	return n.Value
}

// Entity is a quota entity: a user, a client id, both, or an ip.
type Entity struct {
	User, ClientID, IP Name
}

func (e Entity) String() string {
	var parts []string
	for _, c := range []struct {
		t string
		n Name
	}{{TypeUser, e.User}, {TypeClientID, e.ClientID}, {TypeIP, e.IP}} {
		if c.n.Set {
			parts = append(parts, c.t+"="+c.n.String())
		}
	}
	return strings.Join(parts, ",")
}

// Part is one entity component as a request names it: a type and a name
// (nil: the default).
type Part struct {
	Type string
	Name *string
}

// Components are e's parts in a fixed order (user, client-id, ip).
func (e Entity) Components() []Part {
	var out []Part
	for _, c := range []struct {
		t string
		n Name
	}{{TypeUser, e.User}, {TypeClientID, e.ClientID}, {TypeIP, e.IP}} {
		if !c.n.Set {
			continue
		}
		p := Part{Type: c.t}
		if !c.n.Default {
			v := c.n.Value
			p.Name = &v
		}
		out = append(out, p)
	}
	return out
}

// validEntity checks parts as Kafka's ClientQuotaControlManager does
// (validateEntity, configKeysForEntityType) and returns the entity and
// the keys it takes, or an INVALID_REQUEST message.
func validEntity(parts []Part) (Entity, map[string]keyKind, string) {
	var e Entity
	if len(parts) == 0 {
		return e, nil, "Invalid empty client quota entity"
	}
	for _, p := range parts {
		var n *Name
		switch p.Type {
		case TypeUser:
			n = &e.User
		case TypeClientID:
			n = &e.ClientID
		case TypeIP:
			n = &e.IP
		default:
			return e, nil, "Unhandled client quota entity type: " + p.Type
		}
		if n.Set {
			return e, nil, "Invalid client quota entity, duplicate entity entry " + p.Type
		}
		if p.Name == nil {
			*n = DefaultName
		} else {
			if *p.Name == "" {
				return e, nil, "Empty " + p.Type + " not supported"
			}
			*n = Named(*p.Name)
		}
	}
	if e.IP.Set {
		if e.User.Set || e.ClientID.Set {
			return e, nil, "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
		}
		// Deviation: Kafka also takes a host name it can resolve
		// (InetAddress.getByName); minibroker takes IP addresses only.
		if !e.IP.Default && net.ParseIP(e.IP.Value) == nil {
			return e, nil, e.IP.Value + " is not a valid IP or resolvable host."
		}
		return e, ipKeys, ""
	}
	return e, userClientKeys, ""
}
