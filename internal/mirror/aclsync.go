package mirror

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/acl"
)

// ACL sync: the source's ACLs on the mirror's topics are copied to the
// local authorizer at mirror start and on every metadata refresh, those
// that mirror.acl.include selects, when the source allows DescribeAcls
// (DESCRIBE on its cluster). What is copied is remembered (the state,
// synced_acls), so an ACL deleted at the source, or no longer selected,
// is deleted here too; ACLs created locally are never touched.
//
// Only LITERAL ACLs naming a mirrored topic are copied (the topic has a
// partition PREPARING, MIRRORING or PAUSED): a PREFIXED or "*" ACL at the
// source would also reach topics of this cluster that are not mirrors.
// After a failover (STOPPED) a topic's ACLs stay as they are and are no
// longer followed.
//
// mirror.acl.include is a list of rules, any of which selects an ACL:
// "*" (every ACL on a mirrored topic; the default), or
// "TOPIC;name;operation;permission;principal" where each field is a
// value or "*" and trailing fields may be left out: e.g.
// "TOPIC;orders;READ;ALLOW;User:app", "TOPIC;*;*;*;User:app",
// "TOPIC;payments". An empty list copies none (and removes those copied).
// KIP-1279 names the setting but not, in the version this follows, the
// rule syntax; this one is minibroker's.

// ACLStore is the local authorizer's ACLs (acl.Authorizer); nil when the
// broker runs without an authorizer: then nothing is synced.
type ACLStore interface {
	Create(bs []acl.Binding) error
	Describe(f acl.Filter) []acl.Binding
	Delete(filters []acl.Filter) ([][]acl.Binding, error)
}

// ACLSyncStatus is the last ACL sync, as describe shows it.
type ACLSyncStatus struct {
	// AtMs is when it ran (unix ms).
	AtMs int64 `json:"at_ms"`
	// Synced counts the ACLs copied from the source that exist here now.
	Synced  int `json:"synced"`
	Created int `json:"created"`
	Deleted int `json:"deleted"`
	// Error says why the last sync did not run or failed (the source
	// refused DescribeAcls, no local authorizer, …); mirroring goes on.
	Error string `json:"error,omitempty"`
}

// syncedACL is an ACL the mirror copied (kept in the state).
type syncedACL struct {
	Topic      string `json:"topic"`
	Principal  string `json:"principal"`
	Host       string `json:"host"`
	Operation  string `json:"operation"`
	Permission string `json:"permission"`
}

func (s syncedACL) binding() (acl.Binding, error) {
	op, err := kmsg.ParseACLOperation(s.Operation)
	if err != nil {
		return acl.Binding{}, err
	}
	perm, err := kmsg.ParseACLPermissionType(s.Permission)
	if err != nil {
		return acl.Binding{}, err
	}
	return acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: s.Topic,
		PatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: s.Principal, Host: s.Host,
		Operation: op, Permission: perm}, nil
}

func recordOf(b acl.Binding) syncedACL {
	return syncedACL{Topic: b.ResourceName, Principal: b.Principal, Host: b.Host,
		Operation: b.Operation.String(), Permission: b.Permission.String()}
}

// aclRule is one entry of mirror.acl.include; "" fields match all.
type aclRule struct{ name, op, perm, principal string }

// parseACLRules parses mirror.acl.include.
func parseACLRules(list []string) ([]aclRule, error) {
	var rules []aclRule
	for _, e := range list {
		e = strings.TrimSpace(e)
		if e == "*" {
			rules = append(rules, aclRule{})
			continue
		}
		f := strings.Split(e, ";")
		if len(f) > 5 || !strings.EqualFold(f[0], "TOPIC") && f[0] != "*" {
			return nil, fmt.Errorf("%w: %s rule %q: want * or TOPIC;name;operation;permission;principal (trailing fields optional, * for any)",
				ErrBadRequest, SettingACLInclude, e)
		}
		f = append(f, "", "", "", "", "")[:5]
		for i := range f {
			if f[i] = strings.TrimSpace(f[i]); f[i] == "*" {
				f[i] = ""
			}
		}
		r := aclRule{name: f[1], op: strings.ToUpper(f[2]), perm: strings.ToUpper(f[3]), principal: f[4]}
		if r.op != "" {
			if _, err := kmsg.ParseACLOperation(r.op); err != nil {
				return nil, fmt.Errorf("%w: %s rule %q: operation %q", ErrBadRequest, SettingACLInclude, e, f[2])
			}
		}
		if r.perm != "" && r.perm != "ALLOW" && r.perm != "DENY" {
			return nil, fmt.Errorf("%w: %s rule %q: permission %q (ALLOW or DENY)", ErrBadRequest, SettingACLInclude, e, f[3])
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func (r aclRule) matches(b acl.Binding) bool {
	return (r.name == "" || r.name == b.ResourceName) &&
		(r.op == "" || r.op == strings.ToUpper(b.Operation.String())) &&
		(r.perm == "" || r.perm == strings.ToUpper(b.Permission.String())) &&
		(r.principal == "" || r.principal == b.Principal)
}

// SyncACLs runs one ACL sync of the mirror now (the refresh runs it on
// every metadata refresh) and returns its status.
func (m *Manager) SyncACLs(ctx context.Context, name string) (ACLSyncStatus, error) {
	rt, err := m.runtime(name)
	if err != nil {
		return ACLSyncStatus{}, err
	}
	src, err := m.source(rt)
	if err != nil {
		return ACLSyncStatus{}, err
	}
	return m.syncACLs(ctx, rt, src), nil
}

// syncACLs is one sync; its status is kept for describe, and a change of
// its error is logged.
func (m *Manager) syncACLs(ctx context.Context, rt *liveMirror, src *source) ACLSyncStatus {
	st := ACLSyncStatus{AtMs: time.Now().UnixMilli()}
	if err := m.syncACLsOnce(ctx, rt, src, &st); err != nil {
		st.Error = err.Error()
	}
	rt.mu.Lock()
	prev := rt.aclSync
	rt.aclSync = &st
	rt.mu.Unlock()
	switch {
	case st.Error != "" && m.opts.ACLs != nil && (prev == nil || prev.Error != st.Error):
		m.logger.Warn("mirror ACL sync did not run; mirroring goes on", zap.String("mirror", rt.spec.Name), zap.String("error", st.Error))
	case st.Created+st.Deleted > 0:
		m.logger.Info("mirror ACL sync", zap.String("mirror", rt.spec.Name), zap.Int("created", st.Created),
			zap.Int("deleted", st.Deleted), zap.Int("synced", st.Synced))
	}
	return st
}

func (m *Manager) syncACLsOnce(ctx context.Context, rt *liveMirror, src *source, st *ACLSyncStatus) error {
	rt.aclMu.Lock()
	defer rt.aclMu.Unlock()
	store := m.opts.ACLs
	if store == nil {
		return fmt.Errorf("not synced: this broker runs without an authorizer (authorizer.class.name)")
	}
	rules, err := parseACLRules(rt.settings().ACLInclude)
	if err != nil {
		return err
	}
	rt.mu.Lock()
	mirrored := map[string]bool{}
	for topic, ts := range rt.spec.Topics {
		if ts.mirrored() {
			mirrored[topic] = true
		}
	}
	rt.mu.Unlock()

	var desired []acl.Binding
	if len(rules) > 0 && len(mirrored) > 0 {
		if desired, err = sourceTopicACLs(ctx, src); err != nil {
			return err
		}
		desired = slicesFilter(desired, func(b acl.Binding) bool {
			if !mirrored[b.ResourceName] || b.Validate() != nil {
				return false
			}
			for _, r := range rules {
				if r.matches(b) {
					return true
				}
			}
			return false
		})
	}
	want := map[syncedACL]acl.Binding{}
	for _, b := range desired {
		want[recordOf(b)] = b
	}

	rt.mu.Lock()
	before := rt.spec.SyncedACLs
	rt.mu.Unlock()
	var drop []acl.Filter
	var kept []syncedACL
	for _, rec := range before {
		if _, ok := want[rec]; ok {
			continue
		}
		if !mirrored[rec.Topic] {
			continue // failed over (or no longer mirrored): left as it is, no longer followed
		}
		b, err := rec.binding()
		if err != nil {
			continue
		}
		drop = append(drop, exactFilter(b))
	}
	var create []acl.Binding
	for rec, b := range want {
		kept = append(kept, rec)
		if len(store.Describe(exactFilter(b))) == 0 {
			create = append(create, b)
		}
	}
	sort.Slice(kept, func(i, j int) bool { return fmt.Sprint(kept[i]) < fmt.Sprint(kept[j]) })
	// Remember first what is about to be created, so that a crash between
	// the two writes never leaves a copied ACL unknown to the mirror
	// (which would then never delete it).
	rt.mu.Lock()
	rt.spec.SyncedACLs = unionACLs(before, kept)
	err = m.saveLocked(rt)
	rt.mu.Unlock()
	if err != nil {
		return err
	}
	if len(create) > 0 {
		if err := store.Create(create); err != nil {
			return fmt.Errorf("create synced ACLs: %w", err)
		}
	}
	if len(drop) > 0 {
		if _, err := store.Delete(drop); err != nil {
			return fmt.Errorf("delete synced ACLs: %w", err)
		}
	}
	rt.mu.Lock()
	rt.spec.SyncedACLs = kept
	err = m.saveLocked(rt)
	rt.mu.Unlock()
	st.Synced, st.Created, st.Deleted = len(kept), len(create), len(drop)
	return err
}

// sourceTopicACLs asks the source for its LITERAL topic ACLs.
func sourceTopicACLs(ctx context.Context, src *source) ([]acl.Binding, error) {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, src.cl)
	if err != nil {
		return nil, fmt.Errorf("source DescribeAcls: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = ": " + *resp.ErrorMessage
		}
		return nil, fmt.Errorf("source refused DescribeAcls (it needs DESCRIBE on the source cluster and an authorizer there): %w%s", err, msg)
	}
	var out []acl.Binding
	for _, r := range resp.Resources {
		if r.ResourceType != kmsg.ACLResourceTypeTopic || r.ResourcePatternType != kmsg.ACLResourcePatternTypeLiteral {
			continue
		}
		for _, a := range r.ACLs {
			out = append(out, acl.Binding{ResourceType: r.ResourceType, ResourceName: r.ResourceName,
				PatternType: r.ResourcePatternType, Principal: a.Principal, Host: a.Host,
				Operation: a.Operation, Permission: a.PermissionType})
		}
	}
	return out, nil
}

func exactFilter(b acl.Binding) acl.Filter {
	return acl.Filter{ResourceType: b.ResourceType, ResourceName: &b.ResourceName, PatternType: b.PatternType,
		Principal: &b.Principal, Host: &b.Host, Operation: b.Operation, Permission: b.Permission}
}

func unionACLs(a, b []syncedACL) []syncedACL {
	seen := map[syncedACL]bool{}
	var out []syncedACL
	for _, x := range append(append([]syncedACL(nil), a...), b...) {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func slicesFilter(bs []acl.Binding, keep func(acl.Binding) bool) []acl.Binding {
	out := bs[:0]
	for _, b := range bs {
		if keep(b) {
			out = append(out, b)
		}
	}
	return out
}
