package acl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/vfs"
)

// parse reads a binding written as
// "ALLOW User:alice 127.0.0.1 READ TOPIC LITERAL orders".
func parse(t testing.TB, s string) Binding {
	t.Helper()
	f := strings.Fields(s)
	if len(f) != 7 {
		t.Fatalf("bad binding %q", s)
	}
	perm, err := kmsg.ParseACLPermissionType(f[0])
	must(t, err)
	op, err := kmsg.ParseACLOperation(f[3])
	must(t, err)
	rt, err := kmsg.ParseACLResourceType(f[4])
	must(t, err)
	pt, err := kmsg.ParseACLResourcePatternType(f[5])
	must(t, err)
	b := Binding{ResourceType: rt, ResourceName: f[6], PatternType: pt, Principal: f[1], Host: f[2], Operation: op, Permission: perm}
	must(t, b.Validate())
	return b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestAuthorize is a script: each case installs ACLs and asks one
// question, "principal host OPERATION TYPE name" → allowed or not.
func TestAuthorize(t *testing.T) {
	cases := []struct {
		name string
		acls []string
		cfg  Config
		ask  string
		want bool
	}{
		{"no ACLs, default deny", nil, Config{}, "User:alice 10.0.0.1 READ TOPIC t", false},
		{"no ACLs, allow.everyone.if.no.acl.found", nil, Config{AllowIfNoACL: true}, "User:alice 10.0.0.1 READ TOPIC t", true},
		{"ACL on another resource: no-ACL rule applies", []string{"ALLOW User:bob * READ TOPIC LITERAL other"}, Config{AllowIfNoACL: true}, "User:alice 10.0.0.1 READ TOPIC t", true},
		{"ACL for another principal on it: no-ACL rule off", []string{"ALLOW User:bob * READ TOPIC LITERAL t"}, Config{AllowIfNoACL: true}, "User:alice 10.0.0.1 READ TOPIC t", false},
		{"literal allow", []string{"ALLOW User:alice * READ TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 READ TOPIC t", true},
		{"literal allow other name", []string{"ALLOW User:alice * READ TOPIC LITERAL t2"}, Config{}, "User:alice 10.0.0.1 READ TOPIC t", false},
		{"wildcard name", []string{"ALLOW User:alice * READ TOPIC LITERAL *"}, Config{}, "User:alice 10.0.0.1 READ TOPIC anything", true},
		{"wildcard principal", []string{"ALLOW User:* * READ TOPIC LITERAL t"}, Config{}, "User:ANONYMOUS 10.0.0.1 READ TOPIC t", true},
		{"prefixed", []string{"ALLOW User:alice * WRITE TOPIC PREFIXED orders-"}, Config{}, "User:alice 10.0.0.1 WRITE TOPIC orders-eu", true},
		{"prefixed not a prefix", []string{"ALLOW User:alice * WRITE TOPIC PREFIXED orders-"}, Config{}, "User:alice 10.0.0.1 WRITE TOPIC orders", false},
		{"prefixed equal name", []string{"ALLOW User:alice * WRITE TOPIC PREFIXED orders"}, Config{}, "User:alice 10.0.0.1 WRITE TOPIC orders", true},
		{"wrong resource type", []string{"ALLOW User:alice * READ GROUP LITERAL t"}, Config{}, "User:alice 10.0.0.1 READ TOPIC t", false},
		{"host match", []string{"ALLOW User:alice 10.0.0.1 READ TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 READ TOPIC t", true},
		{"host mismatch", []string{"ALLOW User:alice 10.0.0.1 READ TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.2 READ TOPIC t", false},
		{"deny wins over allow", []string{"ALLOW User:alice * READ TOPIC LITERAL t", "DENY User:alice * READ TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 READ TOPIC t", false},
		{"prefixed deny wins over literal allow", []string{"ALLOW User:alice * READ TOPIC LITERAL orders-eu", "DENY User:alice * READ TOPIC PREFIXED orders-"}, Config{}, "User:alice 10.0.0.1 READ TOPIC orders-eu", false},
		{"wildcard-principal deny wins", []string{"ALLOW User:alice * READ TOPIC LITERAL t", "DENY User:* * READ TOPIC LITERAL *"}, Config{}, "User:alice 10.0.0.1 READ TOPIC t", false},
		{"deny from one host only", []string{"ALLOW User:alice * READ TOPIC LITERAL t", "DENY User:alice 10.0.0.9 READ TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 READ TOPIC t", true},
		{"deny ALL denies READ", []string{"ALLOW User:alice * READ TOPIC LITERAL t", "DENY User:alice * ALL TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 READ TOPIC t", false},
		{"deny READ does not deny DESCRIBE", []string{"ALLOW User:alice * DESCRIBE TOPIC LITERAL t", "DENY User:alice * READ TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 DESCRIBE TOPIC t", true},
		{"allow ALL", []string{"ALLOW User:alice * ALL TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 DELETE TOPIC t", true},
		{"READ implies DESCRIBE", []string{"ALLOW User:alice * READ TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 DESCRIBE TOPIC t", true},
		{"WRITE implies DESCRIBE", []string{"ALLOW User:alice * WRITE TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 DESCRIBE TOPIC t", true},
		{"DELETE implies DESCRIBE", []string{"ALLOW User:alice * DELETE TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 DESCRIBE TOPIC t", true},
		{"ALTER implies DESCRIBE", []string{"ALLOW User:alice * ALTER TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 DESCRIBE TOPIC t", true},
		{"CREATE does not imply DESCRIBE", []string{"ALLOW User:alice * CREATE TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 DESCRIBE TOPIC t", false},
		{"DESCRIBE does not imply READ", []string{"ALLOW User:alice * DESCRIBE TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 READ TOPIC t", false},
		{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", []string{"ALLOW User:alice * ALTER_CONFIGS TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 DESCRIBE_CONFIGS TOPIC t", true},
		{"DESCRIBE_CONFIGS does not imply ALTER_CONFIGS", []string{"ALLOW User:alice * DESCRIBE_CONFIGS TOPIC LITERAL t"}, Config{}, "User:alice 10.0.0.1 ALTER_CONFIGS TOPIC t", false},
		{"super user with deny", []string{"DENY User:admin * ALL TOPIC LITERAL t"}, Config{SuperUsers: []string{"User:admin"}}, "User:admin 10.0.0.1 WRITE TOPIC t", true},
		{"cluster", []string{"ALLOW User:alice * IDEMPOTENT_WRITE CLUSTER LITERAL kafka-cluster"}, Config{}, "User:alice 10.0.0.1 IDEMPOTENT_WRITE CLUSTER kafka-cluster", true},
		{"transactional id prefixed", []string{"ALLOW User:alice * WRITE TRANSACTIONAL_ID PREFIXED app-"}, Config{}, "User:alice 10.0.0.1 WRITE TRANSACTIONAL_ID app-1", true},
		{"group", []string{"ALLOW User:alice * READ GROUP LITERAL g"}, Config{}, "User:alice 10.0.0.1 READ GROUP g", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := New(c.cfg)
			var bs []Binding
			for _, s := range c.acls {
				bs = append(bs, parse(t, s))
			}
			must(t, a.Create(bs))
			f := strings.Fields(c.ask)
			op, err := kmsg.ParseACLOperation(f[2])
			must(t, err)
			rt, err := kmsg.ParseACLResourceType(f[3])
			must(t, err)
			if got := a.Authorize(f[0], f[1], rt, f[4], op); got != c.want {
				t.Fatalf("%s with %v: got %v, want %v", c.ask, c.acls, got, c.want)
			}
		})
	}
}

func TestAuthorizeAnyAndOperations(t *testing.T) {
	a := New(Config{})
	must(t, a.Create([]Binding{
		parse(t, "ALLOW User:alice * WRITE TOPIC PREFIXED app-"),
		parse(t, "ALLOW User:bob * WRITE TOPIC LITERAL x"),
		parse(t, "DENY User:bob * WRITE TOPIC LITERAL x"),
	}))
	if !a.AuthorizeAny("User:alice", "h", kmsg.ACLResourceTypeTopic, kmsg.ACLOperationWrite) {
		t.Fatal("alice may write some topic")
	}
	if a.AuthorizeAny("User:bob", "h", kmsg.ACLResourceTypeTopic, kmsg.ACLOperationWrite) {
		t.Fatal("bob's only WRITE is denied")
	}
	if a.AuthorizeAny("User:carol", "h", kmsg.ACLResourceTypeTopic, kmsg.ACLOperationWrite) {
		t.Fatal("carol has no ACL")
	}
	got := a.AuthorizedOperations("User:alice", "h", kmsg.ACLResourceTypeTopic, "app-1", TopicOperations)
	want := int32(1<<kmsg.ACLOperationWrite | 1<<kmsg.ACLOperationDescribe)
	if got != want {
		t.Fatalf("authorized operations %b, want %b", got, want)
	}
}

func TestValidate(t *testing.T) {
	ok := Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:a", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
	must(t, ok.Validate())
	bad := []func(*Binding){
		func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeAny },
		func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeUser },
		func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeMatch },
		func(b *Binding) { b.ResourceName = "" },
		func(b *Binding) { b.Principal = "alice" },
		func(b *Binding) { b.Host = "" },
		func(b *Binding) { b.Operation = kmsg.ACLOperationAny },
		func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeAny },
		func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeCluster; b.ResourceName = "x" },
		func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypePrefixed; b.ResourceName = "*" },
	}
	for i, mut := range bad {
		b := ok
		mut(&b)
		if b.Validate() == nil {
			t.Errorf("case %d: %v validated", i, b)
		}
	}
}

func TestFilters(t *testing.T) {
	a := New(Config{})
	all := []Binding{
		parse(t, "ALLOW User:alice * READ TOPIC LITERAL orders"),
		parse(t, "ALLOW User:alice * READ TOPIC LITERAL *"),
		parse(t, "DENY User:bob 10.0.0.1 WRITE TOPIC PREFIXED ord"),
		parse(t, "ALLOW User:bob * READ GROUP LITERAL orders"),
	}
	must(t, a.Create(all))
	must(t, a.Create(all[:1])) // idempotent
	if a.Len() != 4 {
		t.Fatalf("%d ACLs, want 4", a.Len())
	}
	s := func(v string) *string { return &v }
	any := Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	cases := []struct {
		mut  func(*Filter)
		want int
	}{
		{func(*Filter) {}, 4},
		{func(f *Filter) { f.ResourceType = kmsg.ACLResourceTypeTopic }, 3},
		{func(f *Filter) { f.ResourceName = s("orders") }, 2},
		{func(f *Filter) { f.ResourceName = s("orders"); f.PatternType = kmsg.ACLResourcePatternTypeMatch }, 4},
		{func(f *Filter) { f.PatternType = kmsg.ACLResourcePatternTypePrefixed }, 1},
		{func(f *Filter) { f.Principal = s("User:bob") }, 2},
		{func(f *Filter) { f.Host = s("10.0.0.1") }, 1},
		{func(f *Filter) { f.Operation = kmsg.ACLOperationRead }, 3},
		{func(f *Filter) { f.Permission = kmsg.ACLPermissionTypeDeny }, 1},
	}
	for i, c := range cases {
		f := any
		c.mut(&f)
		if got := len(a.Describe(f)); got != c.want {
			t.Errorf("case %d: %d bindings, want %d", i, got, c.want)
		}
	}
	f := any
	f.Principal = s("User:bob")
	del, err := a.Delete([]Filter{f})
	must(t, err)
	if len(del[0]) != 2 || a.Len() != 2 {
		t.Fatalf("deleted %d, left %d", len(del[0]), a.Len())
	}
}

// TestStoreReopen: ACLs survive a reopen; a damaged file is an error,
// never an empty (allow-everything or deny-everything) set.
func TestStoreReopen(t *testing.T) {
	dir := t.TempDir()
	fs := vfs.Default
	a, err := Open(fs, dir, Config{})
	must(t, err)
	b := parse(t, "ALLOW User:a\u00e9 * READ TOPIC PREFIXED with")
	b.ResourceName = "with space"
	must(t, a.Create([]Binding{b, parse(t, "DENY User:b 127.0.0.1 ALL CLUSTER LITERAL kafka-cluster")}))
	a2, err := Open(fs, dir, Config{})
	must(t, err)
	if a2.Len() != 2 || !a2.Authorize("User:a\u00e9", "h", kmsg.ACLResourceTypeTopic, "with space!", kmsg.ACLOperationRead) {
		t.Fatalf("reopened: %d ACLs", a2.Len())
	}
	must(t, vfs.WriteFileAtomic(fs, dir, dir+"/"+File, []byte("minibroker-acls v1\n2 3 x\n")))
	if _, err := Open(fs, dir, Config{}); err == nil {
		t.Fatal("damaged ACL file opened")
	}
}

// BenchmarkAuthorize1000 is a check against 1,000 ACLs of every kind.
func BenchmarkAuthorize1000(b *testing.B) {
	a := New(Config{})
	var bs []Binding
	for i := range 1000 {
		pt := kmsg.ACLResourcePatternTypeLiteral
		if i%2 == 1 {
			pt = kmsg.ACLResourcePatternTypePrefixed
		}
		bs = append(bs, Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: fmt.Sprintf("topic-%d", i), PatternType: pt,
			Principal: fmt.Sprintf("User:u%d", i%50), Host: "*", Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeAllow})
	}
	must(b, a.Create(bs))
	b.ReportAllocs()
	for b.Loop() {
		a.Authorize("User:u3", "127.0.0.1", kmsg.ACLResourceTypeTopic, "topic-3", kmsg.ACLOperationWrite)
	}
}
