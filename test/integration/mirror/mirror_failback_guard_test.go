package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/minibrokertest"
)

// Guarded failback and loops.

// failbackScenario: A had orders 0..4, B mirrored them and took over
// (barrier at 5), A went on writing a-late-0..2 (5..7) and B wrote
// b-0..4 (6..10). A then defines mirror from-b: starting it cuts A's three
// late records.
func failbackScenario(t *testing.T, a itest.Node) (b *minibrokertest.Cluster) {
	t.Helper()
	if r, err := itest.KadmClient(t, a.Addr()).CreateTopic(context.Background(), 1, 1, nil, "orders"); err != nil || r.Err != nil {
		t.Fatalf("create orders on A: %v %v", err, r.Err)
	}
	pa := itest.IdempotentProducer(t, a.Addr())
	itest.ProduceSerially(t, pa, "orders", 0, "a", 5)
	b = minibrokertest.Start(t)
	b.Mirror("from-a", a.Addr()).Start("orders")
	itest.WaitMirrored(t, a, b, "orders", 1)
	b.Mirror("from-a").Stop("orders")
	itest.ProduceSerially(t, pa, "orders", 0, "a-late", 3)
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "orders", 0, "b", 5)
	itest.Must(t, "create from-b", itest.MirrorOn(a).Create("from-b", []string{b.Addr()}, ""))
	return b
}

// call is adminCall decoding a JSON object.
func call(t *testing.T, method, url string, body any) (int, map[string]any) {
	t.Helper()
	code, raw := itest.AdminCall(t, method, url, body)
	var out map[string]any
	json.Unmarshal(raw, &out)
	return code, out
}

// countPrefix counts the records of orders-0 on n whose value starts with
// prefix.
func countPrefix(t *testing.T, n itest.Node, prefix string) int {
	t.Helper()
	c := 0
	for _, v := range itest.ReadValues(t, n.Addr(), "orders", 0, 0) {
		if strings.HasPrefix(v, prefix) {
			c++
		}
	}
	return c
}

// assertUntouched checks that A is as the scenario left it: log end 8,
// the same bytes, orders writable, no partition of from-b.
func assertUntouched(t *testing.T, a itest.Node, before []byte, what string) {
	t.Helper()
	if end := itest.LogEnd(a, "orders", 0); end != 8 {
		t.Fatalf("%s: A's log end %d, want 8", what, end)
	}
	if got := itest.RawLog(t, a, "orders", 0, 0, 8); string(got) != string(before) {
		t.Fatalf("%s: A's log bytes changed", what)
	}
	if mode, _ := itest.MustPartition(t, a, "orders", 0).Mode(); mode != partition.Writable {
		t.Fatalf("%s: A's orders-0 is no longer writable", what)
	}
	if st, _ := itest.MirrorOn(a).Describe("from-b"); len(st.Partitions) != 0 {
		t.Fatalf("%s: from-b has partitions %+v", what, st.Partitions)
	}
}

// TestMirrorFailbackGuard: `mirror start` into A reports the 3 records
// (offsets 5..7) it would cut; --dry-run and a start without
// --allow-truncate (Go API and HTTP: 409 with the report) change nothing;
// with --allow-truncate the start cuts exactly what the report said: A's
// a-late records go from 3 to 0, describe records the cut, and A ends
// identical to B.
func TestMirrorFailbackGuard(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.HTTP())
	b := failbackScenario(t, a)
	before := itest.RawLog(t, a, "orders", 0, 0, 8)
	m := itest.MirrorOn(a)
	want := mirror.PartitionTruncation{Topic: "orders", Partition: 0, State: mirror.NoState, LocalLogStart: 0, LocalLogEnd: 8,
		TruncateTo: 5, Offsets: 3, Records: 3}

	dry, err := m.StartWith(t.Context(), "from-b", []string{"orders"}, mirror.StartOptions{DryRun: true})
	itest.Must(t, "dry run", err)
	if len(dry.Partitions) != 1 || dry.Partitions[0] != want || dry.Records != 3 || !dry.Refused {
		t.Fatalf("dry run report %+v, want %+v and refused", dry, want)
	}
	assertUntouched(t, a, before, "after the dry run")

	_, err = m.StartWith(t.Context(), "from-b", []string{"orders"}, mirror.StartOptions{})
	var refused *mirror.TruncateRefusedError
	wantRep := dry
	wantRep.DryRun = false
	if !errors.Is(err, mirror.ErrRefused) || !errors.As(err, &refused) || !reflect.DeepEqual(refused.Report, wantRep) {
		t.Fatalf("start without --allow-truncate: %v, want the refusal with the dry run's report", err)
	}
	if !strings.Contains(err.Error(), "orders-0: 3 records") || !strings.Contains(err.Error(), "--allow-truncate") {
		t.Fatalf("refusal %q does not say what and how", err)
	}
	assertUntouched(t, a, before, "after the refused start")

	base := "http://" + a.HTTPAddr() + "/v1/mirrors/from-b/start"
	code, body := call(t, "POST", base, map[string]any{"topics": []string{"orders"}})
	if rep, _ := body["report"].(map[string]any); code != http.StatusConflict || rep == nil || rep["records"] != float64(3) {
		t.Fatalf("HTTP start without allow_truncate: %d %v, want 409 with the report", code, body)
	}
	code, body = call(t, "POST", base, map[string]any{"topics": []string{"orders"}, "dry_run": true})
	if code != http.StatusOK || body["records"] != float64(3) || body["refused"] != true {
		t.Fatalf("HTTP dry run: %d %v", code, body)
	}
	if code, body = call(t, "POST", "http://"+a.HTTPAddr()+"/v1/mirrors/from-b/stop", map[string]any{"topics": []string{}, "dry_run": true}); code != http.StatusBadRequest {
		t.Fatalf("stop with dry_run: %d %v, want 400", code, body)
	}
	assertUntouched(t, a, before, "after the HTTP refusals")

	// The CLI prints the same report; without --allow-truncate it exits non-zero.
	admin := "--admin=" + a.HTTPAddr()
	out, err := itest.RunCLI(t, "mirror", "start", "from-b", "--topics", "orders", "--dry-run", admin)
	if err != nil || !strings.Contains(out, "dry run, nothing changed") || !strings.Contains(out, "total: 3 records") ||
		!strings.Contains(out, "refused without --allow-truncate") {
		t.Fatalf("mirror start --dry-run: %v\n%s", err, out)
	}
	t.Logf("mirror start --dry-run:\n%s", out)
	out, err = itest.RunCLI(t, "mirror", "start", "from-b", "--topics", "orders", admin)
	if err == nil || !strings.Contains(out, "REFUSED, nothing changed") || !strings.Contains(out, "HTTP 409") {
		t.Fatalf("mirror start without --allow-truncate: %v\n%s", err, out)
	}
	assertUntouched(t, a, before, "after the CLI")

	if n := countPrefix(t, a, "a-late"); n != 3 {
		t.Fatalf("A holds %d a-late records before the start, want 3", n)
	}
	code, body = call(t, "POST", base, map[string]any{"topics": []string{"orders"}, "allow_truncate": true})
	if rep, _ := body["start"].(map[string]any); code != http.StatusOK || rep == nil || rep["records"] != float64(3) {
		t.Fatalf("HTTP start with allow_truncate: %d %v", code, body)
	}
	itest.WaitMirrored(t, b, a, "orders", 1)
	itest.AssertIdentical(t, b, a, "orders", 0, itest.LogEnd(b, "orders", 0))
	removed := 3 - countPrefix(t, a, "a-late")
	if int64(removed) != dry.Records {
		t.Fatalf("the start removed %d records, its report said %d", removed, dry.Records)
	}
	st, _ := m.Describe("from-b")
	if tr := st.Partitions[0].Truncated; tr == nil || *tr != want {
		t.Fatalf("describe's record of the cut: %+v, want %+v", tr, want)
	}
}

// TestMirrorFailbackWithoutGuard is the negative control: with the guard
// switched off, the same start (no --allow-truncate) is accepted and
// removes A's three late records without a word.
func TestMirrorFailbackWithoutGuard(t *testing.T) {
	t.Parallel()
	a := itest.StartBroker(t, itest.BrokerOptions{Mirror: mirror.WithTestHooks(mirror.Options{}, itest.MirrorHooks{NoTruncateGuard: true})})
	b := failbackScenario(t, a)
	if n := countPrefix(t, a, "a-late"); n != 3 {
		t.Fatalf("A holds %d a-late records before the start, want 3", n)
	}
	itest.Must(t, "start", itest.MirrorOn(a).Start(t.Context(), "from-b", []string{"orders"}))
	itest.WaitMirrored(t, b, a, "orders", 1)
	if n := countPrefix(t, a, "a-late"); n != 0 {
		t.Fatalf("A still holds %d a-late records", n)
	}
	t.Log("without the guard a plain start silently removed A's 3 late records")
}

// TestMirrorLoopRefused: B mirrors orders from A; A asked to mirror
// orders from B is refused, naming both clusters and both mirrors, and
// A's orders stays writable. B describes its mirrored topic with
// mirror.name and mirror.source.cluster.id. Once B fails over, the same
// start on A is a failback and is accepted. Negative control: with the
// check off, A's start is accepted and A's orders turns read-only too:
// neither cluster takes writes.
func TestMirrorLoopRefused(t *testing.T) {
	t.Parallel()
	for _, check := range []bool{true, false} {
		t.Run(map[bool]string{true: "check", false: "without"}[check], func(t *testing.T) {
			t.Parallel()
			a := itest.StartBroker(t, itest.BrokerOptions{Mirror: mirror.WithTestHooks(mirror.Options{}, itest.MirrorHooks{NoLoopCheck: !check})})
			if r, err := itest.KadmClient(t, a.Addr()).CreateTopic(context.Background(), 1, 1, nil, "orders"); err != nil || r.Err != nil {
				t.Fatalf("create orders on A: %v %v", err, r.Err)
			}
			pa := itest.IdempotentProducer(t, a.Addr())
			itest.ProduceSerially(t, pa, "orders", 0, "a", 5)
			b := minibrokertest.Start(t)
			b.Mirror("from-a", a.Addr()).Start("orders")
			itest.WaitMirrored(t, a, b, "orders", 1)

			rc, err := itest.KadmClient(t, b.Addr()).DescribeTopicConfigs(context.Background(), "orders")
			itest.Must(t, "describe configs", err)
			cfg := map[string]string{}
			for _, c := range rc[0].Configs {
				if c.Value != nil {
					cfg[c.Key] = *c.Value
				}
			}
			if cfg[mirror.ConfigMirrorName] != "from-a" || cfg[mirror.ConfigMirrorSourceClusterID] != a.Broker().ClusterID() {
				t.Fatalf("B describes orders with mirror.name=%q mirror.source.cluster.id=%q, want from-a and %s",
					cfg[mirror.ConfigMirrorName], cfg[mirror.ConfigMirrorSourceClusterID], a.Broker().ClusterID())
			}

			ma := itest.MirrorOn(a)
			itest.Must(t, "create from-b", ma.CreateWith("from-b", []string{b.Addr()}, mirror.CreateOptions{CheckSource: true}))
			err = ma.Start(t.Context(), "from-b", []string{"orders"})
			if !check {
				itest.Must(t, "start without the loop check", err)
				if e := pa.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("x")}).FirstErr(); !errors.Is(e, kerr.PolicyViolation) {
					t.Fatalf("without the check, produce to A: %v, want POLICY_VIOLATION (both sides read-only)", e)
				}
				return
			}
			if !errors.Is(err, mirror.ErrRefused) {
				t.Fatalf("start of a loop: %v, want refused", err)
			}
			for _, want := range []string{"loop", "from-a", "from-b", a.Broker().ClusterID(), b.ClusterID()} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("refusal %q does not name %q", err, want)
				}
			}
			itest.ProduceSerially(t, pa, "orders", 0, "a-more", 1) // A still takes writes
			if st, _ := ma.Describe("from-b"); len(st.Partitions) != 0 {
				t.Fatalf("the refused start left partitions %+v", st.Partitions)
			}

			itest.WaitMirrored(t, a, b, "orders", 1)
			b.Mirror("from-a").Stop("orders") // B takes over: no loop any more
			itest.Must(t, "failback start after B's failover", ma.Start(t.Context(), "from-b", []string{"orders"}))
			itest.WaitMirrored(t, b, a, "orders", 1)
		})
	}
}

// TestMirrorRestartAfterFailoverNeedsNoPermission: B fails over and
// writes nothing; restarting B's mirror cuts only B's barrier, which no
// consumer reads: the dry run reports 1 barrier and 0 records, and a
// plain start (no --allow-truncate) is accepted.
func TestMirrorRestartAfterFailoverNeedsNoPermission(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "orders", 0, "a", 5)
	b := minibrokertest.Start(t)
	m := b.Mirror("from-a", a.Addr()).Start("orders")
	itest.WaitMirrored(t, a, b, "orders", 1)
	m.Stop("orders") // barrier at 5
	rep, err := itest.MirrorOn(b).StartWith(t.Context(), "from-a", []string{"orders"}, mirror.StartOptions{DryRun: true})
	itest.Must(t, "dry run", err)
	if len(rep.Partitions) != 1 || rep.Barriers != 1 || rep.Records != 0 || rep.Markers != 0 || rep.Refused ||
		rep.Partitions[0].TruncateTo != 5 || rep.Partitions[0].State != mirror.Stopped {
		t.Fatalf("dry run of the restart: %+v", rep)
	}
	m.Start("orders")
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "orders", 0, "a-more", 2)
	itest.WaitMirrored(t, a, b, "orders", 1)
	itest.AssertIdentical(t, a, b, "orders", 0, itest.LogEnd(a, "orders", 0))
}
