package mirror

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// topicACLs counts the LITERAL ACLs on topic seen by admin on c.
func topicACLs(t *testing.T, c *minibrokertest.Cluster, topic string) int {
	t.Helper()
	code, n := itest.DescribeACLs(t, itest.AclClient(t, c, "admin"), func(r *kmsg.DescribeACLsRequest) {
		r.ResourceType, r.ResourcePatternType, r.ResourceName = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, &topic
	})
	if code != 0 {
		t.Fatalf("DescribeAcls on %s: code %d", topic, code)
	}
	return n
}

// TestMirrorACLSync: a source with the authorizer on holds ACLs on two
// topics; the mirror (connecting as a super user, so DescribeAcls is
// allowed) mirrors one of them. With mirror.acl.include selecting
// principal alice's ACLs, the mirrored topic's alice ACLs appear on the
// destination at mirror start, bob's (not selected) and the other topic's
// (not mirrored) do not. An ACL deleted at the source is deleted here at
// the next sync; an ACL created locally is left alone. A source without an
// authorizer refuses DescribeAcls: describe reports it, and the mirror
// goes on mirroring.
func TestMirrorACLSync(t *testing.T) {
	t.Parallel()
	src := itest.AclBroker(t, true, minibrokertest.Topic("orders", 1), minibrokertest.Topic("secret", 1))
	ctx := context.Background()
	adm := kadm.NewClient(itest.AclClient(t, src, "admin"))
	create := func(c *kadm.Client, topic, user string, ops ...kadm.ACLOperation) {
		t.Helper()
		b := kadm.NewACLs().Topics(topic).ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:" + user).AllowHosts().Operations(ops...)
		res, err := c.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	create(adm, "orders", "alice", kadm.OpRead, kadm.OpDescribe)
	create(adm, "orders", "bob", kadm.OpWrite)
	create(adm, "secret", "alice", kadm.OpRead)

	dst := itest.AclBroker(t, true)
	srcCfg := map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
		"sasl.username": "admin", "sasl.password": "admin-secret"}
	m := dst.Broker().Mirrors()
	if err := m.CreateWith("from-src", []string{src.ListenerAddr("SASL_PLAINTEXT")}, mirror.CreateOptions{
		SourceConfig: srcCfg, Config: map[string]string{mirror.SettingACLInclude: "TOPIC;*;*;*;User:alice"}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx, "from-src", []string{"orders"}); err != nil {
		t.Fatal(err)
	}
	if n := topicACLs(t, dst, "orders"); n != 2 {
		st, _ := m.Describe("from-src")
		t.Fatalf("orders ACLs on the destination after start: %d, want alice's 2 (bob's not selected); sync %+v", n, st.ACLSync)
	}
	if n := topicACLs(t, dst, "secret"); n != 0 {
		t.Fatalf("secret (not mirrored) has %d ACLs on the destination", n)
	}
	st, _ := m.Describe("from-src")
	if st.ACLSync == nil || st.ACLSync.Synced != 2 || st.ACLSync.Error != "" {
		t.Fatalf("describe's ACL sync: %+v", st.ACLSync)
	}

	// Deleted at the source → deleted here; a local ACL stays.
	create(kadm.NewClient(itest.AclClient(t, dst, "admin")), "orders", "carol", kadm.OpRead)
	del := kadm.NewACLs().Topics("orders").ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:alice").AllowHosts().Operations(kadm.OpDescribe)
	if _, err := adm.DeleteACLs(ctx, del); err != nil {
		t.Fatal(err)
	}
	if s, err := m.SyncACLs(ctx, "from-src"); err != nil || s.Deleted != 1 || s.Synced != 1 {
		t.Fatalf("sync after a source delete: %+v %v", s, err)
	}
	if n := topicACLs(t, dst, "orders"); n != 2 { // alice READ (synced) + carol READ (local)
		t.Fatalf("orders ACLs after the source deleted one: %d, want 2", n)
	}

	// A source that refuses DescribeAcls (no authorizer there).
	plain := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	itest.ProduceSerially(t, itest.IdempotentProducer(t, plain.Addr()), "orders", 0, "p", 3)
	dst2 := itest.AclBroker(t, true)
	m2 := dst2.Broker().Mirrors()
	if err := m2.Create("from-plain", []string{plain.Addr()}, ""); err != nil {
		t.Fatal(err)
	}
	if err := m2.Start(ctx, "from-plain", []string{"orders"}); err != nil {
		t.Fatalf("start with a source refusing DescribeAcls: %v", err)
	}
	st2, _ := m2.Describe("from-plain")
	if st2.ACLSync == nil || !strings.Contains(st2.ACLSync.Error, "refused DescribeAcls") {
		t.Fatalf("describe's ACL sync with a refusing source: %+v", st2.ACLSync)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if p, ok := dst2.Broker().Partition("orders", 0); ok && p.Offsets().LogEnd == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the mirror did not go on mirroring after the ACL sync was refused")
		}
	}
}
