package adminclient_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/adminclient"
	"github.com/minibroker/minibroker/internal/broker"
	"github.com/minibroker/minibroker/internal/fault"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

func TestHeaderIsTheBrokers(t *testing.T) {
	if adminclient.Header != broker.AdminHeader {
		t.Fatalf("adminclient.Header %q, broker.AdminHeader %q", adminclient.Header, broker.AdminHeader)
	}
}

func tokenFile(t *testing.T, token string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(file, []byte("User:ops "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func produce(t *testing.T, addr, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte{byte('0' + i)}}).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
}

// waitStates polls describe until every partition of the mirror is in
// state (and there are want of them).
func waitStates(t *testing.T, c *adminclient.Client, name string, want int, state mirror.State) mirror.Status {
	t.Helper()
	var st mirror.Status
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if st, err = c.DescribeMirror(context.Background(), name); err != nil {
			t.Fatal(err)
		}
		ok := len(st.Partitions) == want
		for _, p := range st.Partitions {
			ok = ok && p.State == state
		}
		if ok {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("mirror %s not %d partitions %s: %+v", name, want, state, st.Partitions)
		}
	}
}

func states(st mirror.Status) map[string]mirror.State {
	out := map[string]mirror.State{}
	for _, p := range st.Partitions {
		out[p.Topic] = p.State
	}
	return out
}

// TestClientMirrorsAgainstBroker drives every mirror endpoint through the
// typed client against an in-process broker whose admin API needs a
// token: the list's columns, topic patterns with exclude at start and
// patterns at pause, resume and stop (resolved by the broker, with what
// they matched and left alone), a refused start's report, the plan, and
// the refusals (no token 401, a wrong one 403, patterns matching nothing
// 400 with nothing changed).
func TestClientMirrorsAgainstBroker(t *testing.T) {
	ctx := context.Background()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders-1", 1), minibrokertest.Topic("orders-2", 1),
		minibrokertest.Topic("orders-tmp", 1), minibrokertest.Topic("orders-local", 1), minibrokertest.Topic("payments", 1))
	token := strings.Repeat("k", 40)
	b := minibrokertest.Start(t, minibrokertest.HTTP(), minibrokertest.Set("admin.token.file", tokenFile(t, token)),
		minibrokertest.Topic("orders-local", 1))
	for _, topic := range []string{"orders-1", "orders-2", "orders-tmp", "payments"} {
		produce(t, a.Addr(), topic, 3)
	}
	produce(t, b.Addr(), "orders-local", 2) // b's own records

	// No token: 401 with the hint; a wrong one: 403.
	_, err := adminclient.New(adminclient.Options{Addr: b.HTTPAddr()}).MirrorNames(ctx)
	if adminclient.StatusOf(err) != 401 || !strings.Contains(err.Error(), "--admin-token-file") {
		t.Fatalf("without a token: %v", err)
	}
	_, err = adminclient.New(adminclient.Options{Addr: b.HTTPAddr(), TokenFile: tokenFile(t, strings.Repeat("w", 40))}).MirrorNames(ctx)
	if adminclient.StatusOf(err) != 403 {
		t.Fatalf("with a wrong token: %v", err)
	}

	c := adminclient.New(adminclient.Options{Addr: b.HTTPAddr(), TokenFile: tokenFile(t, token), Agent: "test"})
	st, err := c.CreateMirror(ctx, mirror.CreateRequest{Name: "from-a", Source: []string{a.Addr()}})
	if err != nil || st.SourceClusterID != a.ClusterID() {
		t.Fatalf("create: %v %+v", err, st)
	}
	if _, err := c.CreateMirror(ctx, mirror.CreateRequest{Name: "from-a", Source: []string{a.Addr()}}); adminclient.StatusOf(err) != 409 {
		t.Fatalf("create again: %v", err)
	}

	// Patterns that match no source topic: 400, nothing started.
	_, err = c.StartMirror(ctx, "from-a", mirror.TopicsRequest{TopicPatterns: []string{"nothing-.*"}})
	if adminclient.StatusOf(err) != 400 || !strings.Contains(err.Error(), "nothing-.*") {
		t.Fatalf("start with a pattern matching nothing: %v", err)
	}
	// A pattern that is not a regular expression: 400, named.
	if _, err = c.StartMirror(ctx, "from-a", mirror.TopicsRequest{TopicPatterns: []string{"orders-("}}); adminclient.StatusOf(err) != 400 ||
		!strings.Contains(err.Error(), "orders-(") {
		t.Fatalf("start with a bad pattern: %v", err)
	}
	// Exclude without topics, and at pause: 400.
	if _, err = c.StartMirror(ctx, "from-a", mirror.TopicsRequest{Exclude: []string{"x"}}); adminclient.StatusOf(err) != 400 {
		t.Fatalf("exclude without topics: %v", err)
	}
	if names, _ := c.ListMirrors(ctx); len(names) != 1 || len(names[0].Topics) != 0 {
		t.Fatalf("the refused starts started something: %+v", names)
	}

	// orders-.* minus orders-tmp: orders-1 and orders-2 start;
	// orders-local exists on b and is left alone (a pattern never takes
	// over a local topic); payments is not selected.
	st, err = c.StartMirror(ctx, "from-a", mirror.TopicsRequest{TopicPatterns: []string{"orders-.*"}, Exclude: []string{"orders-tmp"}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Match == nil || !slices.Equal(st.Match.Matched, []string{"orders-1", "orders-2"}) ||
		len(st.Match.Skipped) != 1 || !strings.Contains(st.Match.Skipped["orders-local"], "exists locally") {
		t.Fatalf("start's match: %+v", st.Match)
	}
	waitStates(t, c, "from-a", 2, mirror.Mirroring)

	list, err := c.ListMirrors(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %v %+v", err, list)
	}
	if s := list[0]; s.Name != "from-a" || !slices.Equal(s.Topics, []string{"orders-1", "orders-2"}) || s.SourceClusterID != a.ClusterID() ||
		!slices.Equal(s.Source, []string{a.Addr()}) || s.AutoTopics {
		t.Fatalf("list: %+v", s)
	}
	if names, err := c.MirrorNames(ctx); err != nil || !slices.Equal(names, []string{"from-a"}) {
		t.Fatalf("names: %v %v", err, names)
	}

	// Named, b's orders-local would lose its 2 records to the source's: a
	// start is refused with the report, and a dry run says the same.
	_, err = c.StartMirror(ctx, "from-a", mirror.TopicsRequest{Topics: []string{"orders-local"}})
	var refused *adminclient.TruncateRefusedError
	if !errors.As(err, &refused) || adminclient.StatusOf(err) != 409 || !refused.Report.Refused || refused.Report.Records != 2 {
		t.Fatalf("start of a local topic: %v %+v", err, refused)
	}
	rep, err := c.StartMirrorDryRun(ctx, "from-a", mirror.TopicsRequest{Topics: []string{"orders-local"}})
	if err != nil || !rep.DryRun || rep.Records != 2 {
		t.Fatalf("dry run: %v %+v", err, rep)
	}

	// Pause and resume by pattern, against the mirror's topics.
	if _, err = c.PauseMirror(ctx, "from-a", mirror.TopicsRequest{TopicPatterns: []string{"payments|nope"}}); adminclient.StatusOf(err) != 400 {
		t.Fatalf("pause of patterns matching none of the mirror's topics: %v", err)
	}
	if _, err = c.PauseMirror(ctx, "from-a", mirror.TopicsRequest{TopicPatterns: []string{".*-1"}, Exclude: []string{"x"}}); adminclient.StatusOf(err) != 400 {
		t.Fatalf("pause with exclude: %v", err)
	}
	st, err = c.PauseMirror(ctx, "from-a", mirror.TopicsRequest{TopicPatterns: []string{".*-1"}})
	if err != nil || st.Match == nil || !slices.Equal(st.Match.Matched, []string{"orders-1"}) {
		t.Fatalf("pause: %v %+v", err, st.Match)
	}
	if got := states(st); got["orders-1"] != mirror.Paused || got["orders-2"] != mirror.Mirroring {
		t.Fatalf("after pause of .*-1: %v", got)
	}
	if st, err = c.ResumeMirror(ctx, "from-a", mirror.TopicsRequest{TopicPatterns: []string{"orders-[0-9]"}}); err != nil || len(st.Match.Matched) != 2 {
		t.Fatalf("resume: %v %+v", err, st.Match)
	}
	waitStates(t, c, "from-a", 2, mirror.Mirroring)

	pl, err := c.PlanMirror(ctx, "from-a", []string{"orders-1"})
	if err != nil || len(pl.Partitions) != 1 || pl.Partitions[0].Topic != "orders-1" || pl.Partitions[0].LocalLogEndOffset != 3 {
		t.Fatalf("plan: %v %+v", err, pl)
	}

	// Stop by pattern: the failover of both, waited for.
	st, err = c.StopMirror(ctx, "from-a", mirror.TopicsRequest{TopicPatterns: []string{"orders-.*"}, Wait: true})
	if err != nil || st.Stop == nil || st.Stop.Stopped != 2 || !st.Stop.Waited || !slices.Equal(st.Match.Matched, []string{"orders-1", "orders-2"}) {
		t.Fatalf("stop: %v %+v %+v", err, st.Stop, st.Match)
	}
	if err := c.DeleteMirror(ctx, "from-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DescribeMirror(ctx, "from-a"); adminclient.StatusOf(err) != 404 || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("describe after delete: %v", err)
	}
}

// TestClientFaults sets, lists and clears faults through the client, and
// says what is wrong with a broker that has no fault endpoints.
func TestClientFaults(t *testing.T) {
	ctx := context.Background()
	b := minibrokertest.Start(t, minibrokertest.HTTP())
	c := adminclient.New(adminclient.Options{Addr: b.HTTPAddr()})
	st, err := c.SetFault(ctx, fault.Spec{Kind: fault.MirrorPause, Mirror: "m"})
	if err != nil || st.ID == "" || st.Kind != fault.MirrorPause {
		t.Fatalf("set: %v %+v", err, st)
	}
	if _, err := c.SetFault(ctx, fault.Spec{Kind: fault.MirrorThrottle, BytesPerSecond: 1000}); err != nil {
		t.Fatal(err)
	}
	sts, err := c.Faults(ctx)
	if err != nil || len(sts) != 2 {
		t.Fatalf("list: %v %+v", err, sts)
	}
	if err := c.ClearFault(ctx, st.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.ClearFault(ctx, st.ID); adminclient.StatusOf(err) != 404 {
		t.Fatalf("clear again: %v", err)
	}
	if n, err := c.ClearFaults(ctx); err != nil || n != 1 {
		t.Fatalf("clear all: %v %d", err, n)
	}

	off := minibrokertest.Start(t, minibrokertest.HTTP(), minibrokertest.Set("faults.enable", "false"))
	_, err = adminclient.New(adminclient.Options{Addr: off.HTTPAddr()}).Faults(ctx)
	if err == nil || !strings.Contains(err.Error(), "faults.enable=true") {
		t.Fatalf("faults of a broker without them: %v", err)
	}
}
