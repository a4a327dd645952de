package broker

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

// unreadableCount is minibroker_authz_rule_unreadable_total for key.
func unreadableCount(b *Broker, key int16) float64 {
	return testutil.ToFloat64(b.metrics.AuthzUnreadable.WithLabelValues(apiNameOf(key)))
}

// authzRequest is a request as a connection hands it to the broker (a
// session: the authorizer applies; its principal is "").
func authzRequest(key int16, body kmsg.Request) *protocol.Request {
	return &protocol.Request{Key: key, Version: body.GetVersion(), Body: body, Session: &protocol.Session{}}
}

// TestAuthzRulesFailClosed: with the authorizer on and every check
// allowed (allow.everyone.if.no.acl.found, no ACLs), each API's rule
// reads its own request at every served version and lets it through,
// counting nothing unreadable; handed a body of another API, which it
// cannot read, the same rule denies it and counts it. Nothing panics.
func TestAuthzRulesFailClosed(t *testing.T) {
	e := startAuthz(t, true, "allow.everyone.if.no.acl.found=true")
	b := e.b
	served := b.apis()
	for key, rule := range authzTable {
		if rule.apply == nil {
			continue
		}
		for v := served[key].min; v <= served[key].max; v++ {
			body := kmsg.RequestForKey(key)
			body.SetVersion(v)
			if deny, _ := b.authorizeRequest(authzRequest(key, body)); deny != nil {
				t.Errorf("%s v%d, everything allowed: denied with %T", kmsg.NameForKey(key), v, deny)
			}
		}
		if n := unreadableCount(b, key); n != 0 {
			t.Errorf("%s: its own requests counted unreadable %v times", kmsg.NameForKey(key), n)
		}
		foreign := kmsg.Request(kmsg.NewPtrApiVersionsRequest())
		deny, after := b.authorizeRequest(authzRequest(key, foreign))
		if deny == nil || after != nil {
			t.Errorf("%s: a body it cannot read (%T) was not denied", kmsg.NameForKey(key), foreign)
		}
		if n := unreadableCount(b, key); n != 1 {
			t.Errorf("%s: the unreadable body counted %v times, want 1", kmsg.NameForKey(key), n)
		}
	}
}

// TestAuthzFieldRulesFailClosed: the rules that read one field of
// several APIs' requests (the group, the transactional id) deny a
// request that has no such field, where the rules they replace, which
// read the field by name, let it through (seen by changing groupRule
// back to allowing on a missing field: this test fails). A request that
// names its group is checked as usual.
func TestAuthzFieldRulesFailClosed(t *testing.T) {
	e := startAuthz(t, true, "allow.everyone.if.no.acl.found=true")
	b := e.b
	noGroup := authzRequest(0, kmsg.NewPtrProduceRequest()) // Produce names no group
	if deny, _ := groupRule(aclRead)(b, noGroup); deny == nil {
		t.Error("groupRule let a request with no group through")
	}
	if deny, _ := txnRule(aclWrite)(b, noGroup); deny == nil {
		t.Error("txnRule let a request with no transactional id through")
	}
	if n := unreadableCount(b, 0); n != 2 {
		t.Errorf("unreadable Produce counted %v times, want 2", n)
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group = "g"
	if deny, _ := groupRule(aclRead)(b, authzRequest(11, join)); deny != nil {
		t.Errorf("groupRule denied a JoinGroup naming its group: %T", deny)
	}
	// AddPartitionsToTxn v4+ lists transactions instead of naming one:
	// not read, denied.
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.SetVersion(4)
	if deny, _ := txnRule(aclWrite)(b, authzRequest(24, add)); deny == nil {
		t.Error("txnRule let an AddPartitionsToTxn v4 through")
	}
	// A coordinator type the rule does not know is refused.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorType, fc.CoordinatorKeys = 3, []string{"what"}
	if deny, _ := authzTable[10].apply(b, authzRequest(10, fc)); deny == nil {
		t.Error("FindCoordinator with coordinator type 3 was not denied")
	}
}
