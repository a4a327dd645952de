package acl

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// index is an immutable view of the ACLs for Authorize: per resource
// type, the LITERAL entries by name ("*" included) and the PREFIXED ones
// by prefix, with the distinct prefix lengths in increasing order, so a
// check costs two map lookups plus one per distinct prefix length.
type index struct {
	types map[kmsg.ACLResourceType]*resourceIndex
}

type resourceIndex struct {
	literal    map[string][]entry
	prefixed   map[string][]entry
	prefixLens []int
}

// entry is a binding's access-control entry.
type entry struct {
	principal  string
	host       string
	operation  kmsg.ACLOperation
	permission kmsg.ACLPermissionType
}

func buildIndex(bs []Binding) *index {
	ix := &index{types: map[kmsg.ACLResourceType]*resourceIndex{}}
	for _, b := range bs {
		r := ix.types[b.ResourceType]
		if r == nil {
			r = &resourceIndex{literal: map[string][]entry{}, prefixed: map[string][]entry{}}
			ix.types[b.ResourceType] = r
		}
		e := entry{principal: b.Principal, host: b.Host, operation: b.Operation, permission: b.Permission}
		if b.PatternType == kmsg.ACLResourcePatternTypePrefixed {
			if _, ok := r.prefixed[b.ResourceName]; !ok {
				r.prefixLens = append(r.prefixLens, len(b.ResourceName))
			}
			r.prefixed[b.ResourceName] = append(r.prefixed[b.ResourceName], e)
		} else {
			r.literal[b.ResourceName] = append(r.literal[b.ResourceName], e)
		}
	}
	for _, r := range ix.types {
		sort.Ints(r.prefixLens)
		r.prefixLens = dedupe(r.prefixLens)
	}
	return ix
}

func dedupe(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// match accumulates what the ACLs of one resource say about a request.
type match struct {
	found   bool // some ACL names the resource (any principal)
	denied  bool
	allowed bool
}

func (m *match) check(es []entry, principal, host string, op kmsg.ACLOperation) {
	if len(es) > 0 {
		m.found = true
	}
	for _, e := range es {
		if (e.principal != principal && e.principal != WildcardPrincipal) || (e.host != host && e.host != Wildcard) {
			continue
		}
		if e.permission == kmsg.ACLPermissionTypeDeny {
			if e.operation == kmsg.ACLOperationAll || e.operation == op {
				m.denied = true
			}
		} else if implies(e.operation, op) {
			m.allowed = true
		}
	}
}

// appliesTo reports whether b's entry is for principal from host.
func appliesTo(b Binding, principal, host string) bool {
	return (b.Principal == principal || b.Principal == WildcardPrincipal) && (b.Host == host || b.Host == Wildcard)
}

// implies reports whether an ALLOW for granted allows op (Kafka's
// implicit DESCRIBE and DESCRIBE_CONFIGS).
func implies(granted, op kmsg.ACLOperation) bool {
	if granted == op || granted == kmsg.ACLOperationAll {
		return true
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		switch granted {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return granted == kmsg.ACLOperationAlterConfigs
	}
	return false
}
