package admin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/minibrokertest"
)

// describeQuotas renders a DescribeClientQuotas answer as sorted lines
// "{user=alice} producer_byte_rate=1048576".
func describeQuotas(t *testing.T, adm *kadm.Client, strict bool, comps ...kadm.DescribeClientQuotaComponent) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	qs, err := adm.DescribeClientQuotas(ctx, strict, comps)
	if err != nil {
		t.Fatalf("describe %+v: %v", comps, err)
	}
	var out []string
	for _, q := range qs {
		var vs []string
		for _, v := range q.Values {
			vs = append(vs, v.Key+"="+strings.TrimRight(strings.TrimRight(v.String()[len(v.Key)+1:], "0"), "."))
		}
		slices.Sort(vs)
		out = append(out, q.Entity.String()+" "+strings.Join(vs, " "))
	}
	slices.Sort(out)
	return out
}

// TestClientQuotasAdmin: AlterClientQuotas and DescribeClientQuotas through
// kadm as rpk (`rpk cluster quotas alter/describe --name/--default/--any
// --strict`) and kcl (`kcl admin client-quotas`) call them: every entity
// kind and combination, Kafka's errors for bad entities, keys and values
// (the others in the request still apply), validate_only changing
// nothing, removal, and the quotas surviving a restart (the client-quotas
// file in the data directory).
func TestClientQuotasAdmin(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t)
	adm := itest.KadmClient(t, c.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	good := []kadm.AlterClientQuotaEntry{
		itest.QuotaSet(itest.QuotaEntity("user", "alice"), "producer_byte_rate", 1048576.0, "request_percentage", 12.5),
		itest.QuotaSet(itest.QuotaEntity("user", "alice", "client-id", "<default>"), "consumer_byte_rate", 2e6),
		itest.QuotaSet(itest.QuotaEntity("user", "<default>"), "controller_mutation_rate", 10.0),
		itest.QuotaSet(itest.QuotaEntity("user", "<default>", "client-id", "<default>"), "producer_byte_rate", 5e6),
		itest.QuotaSet(itest.QuotaEntity("client-id", "app"), "consumer_byte_rate", 3e6),
		itest.QuotaSet(itest.QuotaEntity("client-id", "<default>"), "producer_byte_rate", 4e6),
		itest.QuotaSet(itest.QuotaEntity("ip", "<default>"), "connection_creation_rate", 100.0),
		itest.QuotaSet(itest.QuotaEntity("ip", "127.0.0.2"), "connection_creation_rate", 5.0),
	}
	bad := []struct {
		entry kadm.AlterClientQuotaEntry
		msg   string
	}{
		{itest.QuotaSet(itest.QuotaEntity("user", "bob", "ip", "127.0.0.1"), "producer_byte_rate", 1.0), "IP entity should not be combined"},
		{itest.QuotaSet(itest.QuotaEntity("user", "bob1"), "connection_creation_rate", 1.0), "Invalid configuration key connection_creation_rate"},
		{itest.QuotaSet(itest.QuotaEntity("ip", "127.0.0.3"), "producer_byte_rate", 1.0), "Invalid configuration key producer_byte_rate"},
		{itest.QuotaSet(itest.QuotaEntity("user", "bob2"), "producer_byte_rate", 1.5), "cannot be a fractional value"},
		{itest.QuotaSet(itest.QuotaEntity("user", "bob3"), "consumer_byte_rate", 0.0), "must be greater than 0"},
		{itest.QuotaSet(itest.QuotaEntity("user", "bob4"), "not_a_quota", 1.0), "Invalid configuration key not_a_quota"},
		{itest.QuotaSet(itest.QuotaEntity("group", "g"), "producer_byte_rate", 1.0), "Unhandled client quota entity type: group"},
		{itest.QuotaSet(itest.QuotaEntity("user", ""), "producer_byte_rate", 1.0), "Empty user not supported"},
		{itest.QuotaSet(itest.QuotaEntity("ip", "not-an-address"), "connection_creation_rate", 1.0), "is not a valid IP"},
		{kadm.AlterClientQuotaEntry{Entity: itest.QuotaEntity("user", "dup"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1}, {Key: "producer_byte_rate", Value: 2}}}, "Duplicate quota key producer_byte_rate"},
		{kadm.AlterClientQuotaEntry{Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1}}}, "Invalid empty client quota entity"},
	}
	// validate_only: the answers, and nothing stored.
	all := slices.Clone(good)
	for _, b := range bad {
		all = append(all, b.entry)
	}
	res, err := adm.ValidateAlterClientQuotas(ctx, all)
	itest.Must(t, "validate", err)
	checkAltered(t, res, len(good), bad)
	if got := describeQuotas(t, adm, false); len(got) != 0 {
		t.Fatalf("validate_only stored %v", got)
	}
	res, err = adm.AlterClientQuotas(ctx, all)
	itest.Must(t, "alter", err)
	checkAltered(t, res, len(good), bad)

	want := []string{
		"{client-id=<default>} producer_byte_rate=4000000",
		"{client-id=app} consumer_byte_rate=3000000",
		"{ip=127.0.0.2} connection_creation_rate=5",
		"{ip=<default>} connection_creation_rate=100",
		"{user=<default>, client-id=<default>} producer_byte_rate=5000000",
		"{user=<default>} controller_mutation_rate=10",
		"{user=alice, client-id=<default>} consumer_byte_rate=2000000",
		"{user=alice} producer_byte_rate=1048576 request_percentage=12.5",
	}
	if got := describeQuotas(t, adm, false); !slices.Equal(got, want) {
		t.Fatalf("describe all:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	exact := func(typ, name string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchName: kadm.StringPtr(name), MatchType: 0}
	}
	def := func(typ string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchType: 1}
	}
	anyOf := func(typ string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchType: 2}
	}
	for _, tc := range []struct {
		what   string
		strict bool
		comps  []kadm.DescribeClientQuotaComponent
		want   []string
	}{
		{"rpk --name user=alice", false, []kadm.DescribeClientQuotaComponent{exact("user", "alice")}, []string{want[6], want[7]}},
		{"rpk --name user=alice --strict", true, []kadm.DescribeClientQuotaComponent{exact("user", "alice")}, []string{want[7]}},
		{"rpk --default user --strict", true, []kadm.DescribeClientQuotaComponent{def("user")}, []string{want[5]}},
		{"rpk --default user --default client-id", false, []kadm.DescribeClientQuotaComponent{def("user"), def("client-id")}, []string{want[4]}},
		{"rpk --any client-id", false, []kadm.DescribeClientQuotaComponent{anyOf("client-id")}, []string{want[0], want[1], want[4], want[6]}},
		{"rpk --any ip", false, []kadm.DescribeClientQuotaComponent{anyOf("ip")}, []string{want[2], want[3]}},
		{"kcl --name ip=127.0.0.2", false, []kadm.DescribeClientQuotaComponent{exact("ip", "127.0.0.2")}, []string{want[2]}},
	} {
		if got := describeQuotas(t, adm, tc.strict, tc.comps...); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, got, tc.want)
		}
	}
	// Bad filters: Kafka's codes.
	for _, tc := range []struct {
		comps []kadm.DescribeClientQuotaComponent
		want  error
	}{
		{[]kadm.DescribeClientQuotaComponent{anyOf("ip"), anyOf("user")}, kerr.InvalidRequest},
		{[]kadm.DescribeClientQuotaComponent{anyOf("user"), def("user")}, kerr.InvalidRequest},
		{[]kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 0}}, kerr.InvalidRequest},
		{[]kadm.DescribeClientQuotaComponent{anyOf("group")}, kerr.UnsupportedVersion},
	} {
		if _, err := adm.DescribeClientQuotas(ctx, false, tc.comps); !errors.Is(err, tc.want) {
			t.Errorf("describe %+v: %v, want %v", tc.comps, err, tc.want)
		}
	}

	// Remove one key of alice's; rpk's --delete.
	res, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: itest.QuotaEntity("user", "alice"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Remove: true}}}})
	itest.Must(t, "remove", err)
	if res[0].Err != nil {
		t.Fatalf("remove: %v %s", res[0].Err, res[0].ErrMessage)
	}
	want[7] = "{user=alice} producer_byte_rate=1048576"
	before := describeQuotas(t, adm, false)
	if !slices.Equal(before, want) {
		t.Fatalf("after removal: %v", before)
	}

	c.Restart()
	adm = itest.KadmClient(t, c.Addr())
	if got := describeQuotas(t, adm, false); !slices.Equal(got, before) {
		t.Fatalf("after restart:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
}

func checkAltered(t *testing.T, res kadm.AlteredClientQuotas, nGood int, bad []struct {
	entry kadm.AlterClientQuotaEntry
	msg   string
}) {
	t.Helper()
	if len(res) != nGood+len(bad) {
		t.Fatalf("%d results, want %d", len(res), nGood+len(bad))
	}
	for i, r := range res[:nGood] {
		if r.Err != nil {
			t.Errorf("entry %d %v: %v %s", i, r.Entity, r.Err, r.ErrMessage)
		}
	}
	for i, r := range res[nGood:] {
		if !errors.Is(r.Err, kerr.InvalidRequest) || !strings.Contains(r.ErrMessage, bad[i].msg) {
			t.Errorf("entry %v: %v %q, want INVALID_REQUEST %q", r.Entity, r.Err, r.ErrMessage, bad[i].msg)
		}
	}
}
