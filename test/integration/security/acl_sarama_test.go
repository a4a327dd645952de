package security

import (
	"errors"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/IBM/sarama"
)

// TestSaramaACLs: sarama's ClusterAdmin creates, lists and deletes ACLs
// as the super user admin; as bob (no cluster ACL) CreateACL answers
// CLUSTER_AUTHORIZATION_FAILED and nothing is added.
func TestSaramaACLs(t *testing.T) {
	c := itest.AclBroker(t, true)
	admin := func(user string) sarama.ClusterAdmin {
		cfg := itest.SaramaConfig(sarama.V3_6_0_0)
		cfg.Admin.Retry.Max = 0
		cfg.Net.SASL.Enable, cfg.Net.SASL.Mechanism = true, sarama.SASLTypePlaintext
		cfg.Net.SASL.User, cfg.Net.SASL.Password = user, user+"-secret"
		adm, err := sarama.NewClusterAdmin([]string{c.ListenerAddr("SASL_PLAINTEXT")}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { adm.Close() })
		return adm
	}
	adm := admin("admin")
	res := sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: "orders", ResourcePatternType: sarama.AclPatternPrefixed}
	acl := sarama.Acl{Principal: "User:alice", Host: "*", Operation: sarama.AclOperationRead, PermissionType: sarama.AclPermissionAllow}
	//lint:ignore SA1019 CreateACL is sarama's only call that sends CreateAcls v2 (CreateACLs stops at v1)
	if err := adm.CreateACL(res, acl); err != nil {
		t.Fatal(err)
	}
	filter := sarama.AclFilter{ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny}
	list := func() int {
		t.Helper()
		got, err := adm.ListAcls(filter)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range got {
			n += len(r.Acls)
		}
		return n
	}
	if n := list(); n != 1 {
		t.Fatalf("%d ACLs listed, want 1", n)
	}
	//lint:ignore SA1019 as above: CreateAcls v2
	err := admin("bob").CreateACL(res, sarama.Acl{Principal: "User:bob", Host: "*", Operation: sarama.AclOperationAll, PermissionType: sarama.AclPermissionAllow})
	if !errors.Is(err, sarama.ErrClusterAuthorizationFailed) {
		t.Fatalf("bob CreateACL: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if n := list(); n != 1 {
		t.Fatalf("after bob's refused CreateACL: %d ACLs", n)
	}
	deleted, err := adm.DeleteACL(filter, false)
	if err != nil || len(deleted) != 1 || list() != 0 {
		t.Fatalf("delete: %v %v", err, deleted)
	}
}
