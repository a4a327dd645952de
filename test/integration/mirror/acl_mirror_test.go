package mirror

import (
	"context"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestACLsOnMirror: on a destination with the authorizer on and no ACL
// for the group, the mirror's group-offset sync still commits (it acts
// as the broker itself, not as the group's members); reads of the
// mirrored topic follow its ACLs: alice (READ) gets the records, bob
// TOPIC_AUTHORIZATION_FAILED.
func TestACLsOnMirror(t *testing.T) {
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "orders", 0, "o", 5)
	ctx := context.Background()
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 3, LeaderEpoch: -1})
	if r, err := kadm.NewClient(itest.NewClient(t, a.Addr())).CommitOffsets(ctx, "billing", os); err != nil || r.Error() != nil {
		t.Fatalf("commit on the source: %v %v", err, r.Error())
	}

	b := itest.AclBroker(t, true)
	b.Mirror("from-a", a.Addr()).Start("orders").WaitCaughtUp(itest.Timeout)
	if n, err := b.Broker().Mirrors().SyncGroupOffsets(ctx, "from-a"); err != nil || n == 0 {
		t.Fatalf("group sync with the authorizer on and no group ACL: %d groups, %v", n, err)
	}
	admin := kadm.NewClient(itest.AclClient(t, b, "admin"))
	got, err := admin.FetchOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := got.Lookup("orders", 0); !ok || o.At != 3 {
		t.Fatalf("synced offset %v %v, want 3", o, ok)
	}

	res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("orders").
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead))
	itest.MustACLs(t, err, res)
	md, err := admin.ListTopics(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	id := [16]byte(md["orders"].ID)
	if code, n := itest.FetchCode(t, itest.AclClient(t, b, "alice"), "orders", id); code != 0 || n == 0 {
		t.Fatalf("alice reads the mirrored topic: code %d, %d bytes", code, n)
	}
	if code, n := itest.FetchCode(t, itest.AclClient(t, b, "bob"), "orders", id); code != kerr.TopicAuthorizationFailed.Code || n != 0 {
		t.Fatalf("bob reads the mirrored topic: code %d, %d bytes; want TOPIC_AUTHORIZATION_FAILED", code, n)
	}
}
