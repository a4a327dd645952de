package acl

import (
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/vfs"
)

// Config is the authorizer's settings, by Kafka's names.
type Config struct {
	// SuperUsers are principals allowed everything (super.users, as
	// "User:alice;User:bob").
	SuperUsers []string
	// AllowIfNoACL is allow.everyone.if.no.acl.found.
	AllowIfNoACL bool
}

// Authorizer decides requests against the ACLs and keeps them. Authorize
// takes no lock: it reads an immutable index swapped atomically on every
// change, so 1,000 ACLs cost a few map lookups per check.
type Authorizer struct {
	super        map[string]bool
	allowIfNoACL bool
	index        atomic.Pointer[index]

	mu       sync.Mutex // guards bindings and the file
	bindings []Binding
	store    *store // nil: not kept (unit tests)
}

// New returns an authorizer with no ACLs that keeps none on disk.
func New(cfg Config) *Authorizer {
	a := &Authorizer{super: map[string]bool{}, allowIfNoACL: cfg.AllowIfNoACL}
	for _, u := range cfg.SuperUsers {
		if u != "" {
			a.super[u] = true
		}
	}
	a.index.Store(buildIndex(nil))
	return a
}

// Open returns an authorizer whose ACLs are kept in dir's ACL file
// (store.go), loading those already there.
func Open(fs vfs.FS, dir string, cfg Config) (*Authorizer, error) {
	a := New(cfg)
	a.store = &store{fs: fs, dir: dir}
	bs, err := a.store.load()
	if err != nil {
		return nil, err
	}
	a.bindings = bs
	a.index.Store(buildIndex(bs))
	return a, nil
}

// IsSuperUser reports whether principal is in super.users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.super[principal] }

// Authorize reports whether principal, connected from host (the client's
// IP), may perform op on the resource (rt, name).
func (a *Authorizer) Authorize(principal, host string, rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) bool {
	if a.super[principal] {
		return true
	}
	r := a.index.Load().types[rt]
	if r == nil {
		return a.allowIfNoACL
	}
	var m match
	m.check(r.literal[name], principal, host, op)
	if name != Wildcard {
		m.check(r.literal[Wildcard], principal, host, op)
	}
	for _, n := range r.prefixLens {
		if n > len(name) {
			break
		}
		m.check(r.prefixed[name[:n]], principal, host, op)
	}
	switch {
	case m.denied:
		return false
	case m.allowed:
		return true
	case !m.found:
		return a.allowIfNoACL
	}
	return false
}

// AuthorizeAny reports whether principal may perform op on at least one
// resource of type rt (Kafka's authorizeByResourceType, used for
// idempotent producers: WRITE on any topic). It holds when principal is a
// super user, when an ALLOW for op applies to principal and host on some
// pattern that no DENY for principal covers, or when there are no ACLs
// of that type and allow.everyone.if.no.acl.found is set.
func (a *Authorizer) AuthorizeAny(principal, host string, rt kmsg.ACLResourceType, op kmsg.ACLOperation) bool {
	if a.super[principal] {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := false
	for _, b := range a.bindings {
		if b.ResourceType != rt {
			continue
		}
		seen = true
		if b.Permission != kmsg.ACLPermissionTypeAllow || !appliesTo(b, principal, host) || !implies(b.Operation, op) {
			continue
		}
		if a.Authorize(principal, host, rt, b.ResourceName, op) {
			return true
		}
	}
	return !seen && a.allowIfNoACL
}

// AuthorizedOperations is KIP-430's bit field: bit op is set for each of
// ops principal may perform on the resource.
func (a *Authorizer) AuthorizedOperations(principal, host string, rt kmsg.ACLResourceType, name string, ops []kmsg.ACLOperation) int32 {
	var bits int32
	for _, op := range ops {
		if a.Authorize(principal, host, rt, name, op) {
			bits |= 1 << op
		}
	}
	return bits
}

// Operations a resource type supports (Kafka's AclEntry.supportedOperations),
// the ones authorized_operations reports.
var (
	TopicOperations = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs}
	GroupOperations   = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete}
	ClusterOperations = []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe}
)

// Create adds bindings (each already validated; an existing one is kept
// once) and makes them durable before returning.
func (a *Authorizer) Create(bs []Binding) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	next := append([]Binding(nil), a.bindings...)
	have := make(map[Binding]bool, len(next))
	for _, b := range next {
		have[b] = true
	}
	for _, b := range bs {
		if !have[b] {
			have[b] = true
			next = append(next, b)
		}
	}
	return a.replaceLocked(next)
}

// Describe returns the bindings f selects.
func (a *Authorizer) Describe(f Filter) []Binding {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Binding
	for _, b := range a.bindings {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// Delete removes the bindings each filter selects, durably, and returns
// them per filter (a binding two filters select is reported by both).
func (a *Authorizer) Delete(filters []Filter) ([][]Binding, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([][]Binding, len(filters))
	var keep []Binding
	for _, b := range a.bindings {
		hit := false
		for i, f := range filters {
			if f.Matches(b) {
				out[i] = append(out[i], b)
				hit = true
			}
		}
		if !hit {
			keep = append(keep, b)
		}
	}
	if len(keep) == len(a.bindings) {
		return out, nil
	}
	return out, a.replaceLocked(keep)
}

// Len is the number of ACLs.
func (a *Authorizer) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.bindings)
}

func (a *Authorizer) replaceLocked(next []Binding) error {
	if a.store != nil {
		if err := a.store.save(next); err != nil {
			return err
		}
	}
	a.bindings = next
	a.index.Store(buildIndex(next))
	return nil
}
