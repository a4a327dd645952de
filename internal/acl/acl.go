// Package acl is minibroker's authorizer: Kafka's StandardAuthorizer
// semantics (KIP-801) over ACL bindings kept durably in the data
// directory.
//
// Rules, as Kafka's StandardAuthorizer:
//   - a super user (super.users) may do everything;
//   - the ACLs that apply to a resource are the LITERAL ones with its name,
//     the LITERAL ones named "*", and the PREFIXED ones whose name is a
//     prefix of its name; of those, an ACL applies to a request when its
//     principal is the request's or "User:*" and its host is the client's
//     IP or "*";
//   - a DENY for the operation (or ALL) wins over any ALLOW;
//   - an ALLOW for the operation or ALL allows it; an ALLOW for READ,
//     WRITE, DELETE or ALTER also allows DESCRIBE, and one for
//     ALTER_CONFIGS allows DESCRIBE_CONFIGS;
//   - when no ACL at all names the resource (any principal, host or
//     operation), allow.everyone.if.no.acl.found decides (default false).
//
// Resource types TOPIC, GROUP, CLUSTER and TRANSACTIONAL_ID are enforced;
// DELEGATION_TOKEN and USER bindings are refused at creation (minibroker
// has neither delegation tokens nor user quotas). The enums are kmsg's,
// which carry Kafka's wire numbers.
package acl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClusterName is the name of the one CLUSTER resource (Kafka's
// "kafka-cluster").
const ClusterName = "kafka-cluster"

// Wildcard is the resource name, principal and host that match all.
const (
	Wildcard          = "*"
	WildcardPrincipal = "User:*"
)

// Binding is one ACL: a resource pattern and an access-control entry.
type Binding struct {
	ResourceType kmsg.ACLResourceType
	ResourceName string
	PatternType  kmsg.ACLResourcePatternType
	Principal    string
	Host         string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

func (b Binding) String() string {
	return fmt.Sprintf("(%s %s %q) %s %s from %s: %s", b.PatternType, b.ResourceType, b.ResourceName,
		b.Permission, b.Principal, b.Host, b.Operation)
}

// ErrInvalid is returned for a binding that cannot be created (Kafka's
// InvalidRequestException: INVALID_REQUEST).
var ErrInvalid = errors.New("acl: invalid binding")

// Validate checks a binding to create, as Kafka's CreateAcls does.
func (b Binding) Validate() error {
	switch b.ResourceType {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster, kmsg.ACLResourceTypeTransactionalId:
	default:
		return fmt.Errorf("%w: resource type %s is not supported", ErrInvalid, b.ResourceType)
	}
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed:
	default:
		return fmt.Errorf("%w: pattern type %s (LITERAL or PREFIXED)", ErrInvalid, b.PatternType)
	}
	if b.ResourceName == "" {
		return fmt.Errorf("%w: empty resource name", ErrInvalid)
	}
	if b.ResourceType == kmsg.ACLResourceTypeCluster && (b.ResourceName != ClusterName || b.PatternType != kmsg.ACLResourcePatternTypeLiteral) {
		return fmt.Errorf("%w: the cluster resource is the LITERAL %q", ErrInvalid, ClusterName)
	}
	if b.PatternType == kmsg.ACLResourcePatternTypePrefixed && b.ResourceName == Wildcard {
		// Kafka refuses a PREFIXED "*" too: it would not mean "all".
		return fmt.Errorf("%w: a PREFIXED pattern cannot be %q", ErrInvalid, Wildcard)
	}
	if typ, name, ok := strings.Cut(b.Principal, ":"); !ok || typ == "" || name == "" {
		return fmt.Errorf("%w: principal %q is not Type:name", ErrInvalid, b.Principal)
	}
	if b.Host == "" {
		return fmt.Errorf("%w: empty host (use %q for any)", ErrInvalid, Wildcard)
	}
	if b.Operation < kmsg.ACLOperationAll || b.Operation > kmsg.ACLOperationIdempotentWrite {
		return fmt.Errorf("%w: operation %s", ErrInvalid, b.Operation)
	}
	if b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny {
		return fmt.Errorf("%w: permission %s (ALLOW or DENY)", ErrInvalid, b.Permission)
	}
	return nil
}

// Filter selects bindings (DescribeAcls, DeleteAcls): nil strings and the
// ANY enums match everything; PatternType MATCH matches the bindings that
// would apply to the resource named (LITERAL with that name or "*",
// PREFIXED with a prefix of it), as Kafka's ResourcePatternFilter.
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Matches reports whether the filter selects b.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny:
		if f.ResourceName != nil && *f.ResourceName != b.ResourceName {
			return false
		}
	case kmsg.ACLResourcePatternTypeMatch:
		if f.ResourceName != nil && !patternApplies(b, *f.ResourceName) {
			return false
		}
	default:
		if f.PatternType != b.PatternType || (f.ResourceName != nil && *f.ResourceName != b.ResourceName) {
			return false
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission
}

// patternApplies reports whether b's resource pattern covers name.
func patternApplies(b Binding, name string) bool {
	if b.PatternType == kmsg.ACLResourcePatternTypePrefixed {
		return strings.HasPrefix(name, b.ResourceName)
	}
	return b.ResourceName == name || b.ResourceName == Wildcard
}

// ValidateFilter checks a DescribeAcls or DeleteAcls filter: the enums
// must be known values (Kafka answers INVALID_REQUEST otherwise).
func (f Filter) Validate() error {
	if f.ResourceType < kmsg.ACLResourceTypeAny || f.ResourceType > kmsg.ACLResourceTypeUser {
		return fmt.Errorf("%w: resource type %s", ErrInvalid, f.ResourceType)
	}
	if f.PatternType < kmsg.ACLResourcePatternTypeAny || f.PatternType > kmsg.ACLResourcePatternTypePrefixed {
		return fmt.Errorf("%w: pattern type %s", ErrInvalid, f.PatternType)
	}
	if f.Operation < kmsg.ACLOperationAny || f.Operation > kmsg.ACLOperationDescribeTokens {
		return fmt.Errorf("%w: operation %s", ErrInvalid, f.Operation)
	}
	if f.Permission < kmsg.ACLPermissionTypeAny || f.Permission > kmsg.ACLPermissionTypeAllow {
		return fmt.Errorf("%w: permission %s", ErrInvalid, f.Permission)
	}
	return nil
}
