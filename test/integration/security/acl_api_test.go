package security

import (
	"context"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestACLAPIsRoundTrip: kadm creates ACLs of every resource type,
// pattern type and permission; DescribeAcls selects them by each filter
// field; they survive a clean restart and a crash (kill -9); DeleteAcls
// removes exactly what its filter selects, durably; a principal without
// DESCRIBE/ALTER on the cluster is refused with CLUSTER_AUTHORIZATION_FAILED
// (DescribeAcls, CreateAcls, DeleteAcls, which then deletes nothing).
func TestACLAPIsRoundTrip(t *testing.T) {
	c := itest.AclBroker(t, true)
	admin := itest.AclClient(t, c, "admin")
	adm := kadm.NewClient(admin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	create := func(b *kadm.ACLBuilder) {
		t.Helper()
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("create %s %s: %v", r.Type, r.Name, r.Err)
			}
		}
	}
	create(kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("orders").Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
	create(kadm.NewACLs().Deny("User:bob").DenyHosts("127.0.0.1").Topics("ord").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed))
	create(kadm.NewACLs().Allow("User:alice").AllowHosts("*").Groups("g1").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	create(kadm.NewACLs().Allow("User:alice").AllowHosts("*").Clusters().Operations(kadm.OpIdempotentWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	create(kadm.NewACLs().Allow("User:alice").AllowHosts("*").TransactionalIDs("app-").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed))
	// Creating one again keeps one copy.
	create(kadm.NewACLs().Allow("User:alice").AllowHosts("*").Groups("g1").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))

	s := func(v string) *string { return &v }
	filters := []struct {
		name string
		mut  func(*kmsg.DescribeACLsRequest)
		want int
	}{
		{"any", func(*kmsg.DescribeACLsRequest) {}, 6},
		{"resource type topic", func(r *kmsg.DescribeACLsRequest) { r.ResourceType = kmsg.ACLResourceTypeTopic }, 3},
		{"resource type txn id", func(r *kmsg.DescribeACLsRequest) { r.ResourceType = kmsg.ACLResourceTypeTransactionalId }, 1},
		{"resource name", func(r *kmsg.DescribeACLsRequest) { r.ResourceName = s("orders") }, 2},
		{"pattern literal", func(r *kmsg.DescribeACLsRequest) { r.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral }, 4},
		{"pattern prefixed", func(r *kmsg.DescribeACLsRequest) { r.ResourcePatternType = kmsg.ACLResourcePatternTypePrefixed }, 2},
		{"pattern match", func(r *kmsg.DescribeACLsRequest) {
			r.ResourceType, r.ResourceName, r.ResourcePatternType = kmsg.ACLResourceTypeTopic, s("orders"), kmsg.ACLResourcePatternTypeMatch
		}, 3},
		{"principal", func(r *kmsg.DescribeACLsRequest) { r.Principal = s("User:bob") }, 1},
		{"host", func(r *kmsg.DescribeACLsRequest) { r.Host = s("127.0.0.1") }, 1},
		{"operation", func(r *kmsg.DescribeACLsRequest) { r.Operation = kmsg.ACLOperationRead }, 2},
		{"permission", func(r *kmsg.DescribeACLsRequest) { r.PermissionType = kmsg.ACLPermissionTypeDeny }, 1},
		{"invalid", func(r *kmsg.DescribeACLsRequest) { r.Operation = 77 }, -1},
	}
	check := func(when string) {
		t.Helper()
		for _, f := range filters {
			code, n := itest.DescribeACLs(t, admin, f.mut)
			if f.want < 0 {
				if code != kerr.InvalidRequest.Code {
					t.Errorf("%s: filter %s: code %d, want INVALID_REQUEST", when, f.name, code)
				}
				continue
			}
			if code != 0 || n != f.want {
				t.Errorf("%s: filter %s: code %d, %d ACLs, want %d", when, f.name, code, n, f.want)
			}
		}
	}
	check("created")
	// kadm's own DescribeACLs decodes the same answer.
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics().Allow().AllowHosts().Deny().DenyHosts().
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(described) == 0 || described[0].Err != nil {
		t.Fatalf("kadm describe: %v %v", err, described)
	}

	// A principal without cluster ACLs may neither list nor change ACLs.
	alice := itest.AclClient(t, c, "alice")
	if code, _ := itest.DescribeACLs(t, alice, func(*kmsg.DescribeACLsRequest) {}); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice DescribeAcls: code %d, want CLUSTER_AUTHORIZATION_FAILED", code)
	}
	res, err := kadm.NewClient(alice).CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Clusters().Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(res) != 1 || res[0].Err != kerr.ClusterAuthorizationFailed {
		t.Fatalf("alice CreateAcls: %v %v", err, res)
	}
	// Nor delete them: every filter is refused and nothing goes.
	dres, err := kadm.NewClient(alice).DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Groups("g1").
		Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(dres) != 1 || dres[0].Err != kerr.ClusterAuthorizationFailed || len(dres[0].Deleted) != 0 {
		t.Fatalf("alice DeleteAcls: %v %+v", err, dres)
	}
	if _, n := itest.DescribeACLs(t, admin, func(*kmsg.DescribeACLsRequest) {}); n != 6 {
		t.Fatalf("after alice's denied DeleteAcls: %d ACLs, want 6", n)
	}

	c.Restart()
	check("after restart")
	c.Kill()
	c.Revive()
	check("after kill -9")

	// Delete bob's prefixed deny by principal, host and pattern type.
	del, err := adm.DeleteACLs(ctx, kadm.NewACLs().Deny("User:bob").DenyHosts("127.0.0.1").Topics("ord").
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed))
	if err != nil || len(del) != 1 || del[0].Err != nil || len(del[0].Deleted) != 1 {
		t.Fatalf("delete: %v %+v", err, del)
	}
	c.Kill()
	c.Revive()
	if _, n := itest.DescribeACLs(t, admin, func(*kmsg.DescribeACLsRequest) {}); n != 5 {
		t.Fatalf("after delete and kill -9: %d ACLs, want 5", n)
	}
	if _, n := itest.DescribeACLs(t, admin, func(r *kmsg.DescribeACLsRequest) { r.Principal = s("User:bob") }); n != 0 {
		t.Fatalf("bob's ACL came back: %d", n)
	}
}

// TestACLAPIsWithoutAuthorizer: with authorizer.class.name unset the ACL
// APIs answer SECURITY_DISABLED, as Kafka's do.
func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	c := itest.AclBroker(t, false)
	admin := itest.AclClient(t, c, "admin")
	if code, _ := itest.DescribeACLs(t, admin, func(*kmsg.DescribeACLsRequest) {}); code != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls code %d, want SECURITY_DISABLED", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := kadm.NewClient(admin).CreateACLs(ctx, kadm.NewACLs().Allow("User:a").AllowHosts("*").Topics("t").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(res) != 1 || res[0].Err != kerr.SecurityDisabled {
		t.Fatalf("CreateAcls: %v %v", err, res)
	}
}
