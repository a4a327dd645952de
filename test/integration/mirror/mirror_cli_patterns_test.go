package mirror

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/adminclient"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/minibrokertest"
)

// mirrorListRows parses `mirror list`: KIP-1279's header (MIRROR, TOPICS,
// SOURCE CLUSTER ID, SOURCE BOOTSTRAP), then one mirror a line, each as
// its four fields; nothing at all when there is no mirror.
func mirrorListRows(t *testing.T, out string) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if strings.TrimSpace(out) == "" {
		return nil
	}
	if h := strings.Join(strings.Fields(lines[0]), " "); h != "MIRROR TOPICS SOURCE CLUSTER ID SOURCE BOOTSTRAP" {
		t.Fatalf("mirror list header %q:\n%s", h, out)
	}
	var rows [][]string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 4 {
			t.Fatalf("mirror list row %q has %d fields, want 4:\n%s", l, len(f), out)
		}
		rows = append(rows, f)
	}
	return rows
}

// mirrorStates is every partition's state in `mirror describe --json`,
// as topic-partition → state.
func mirrorStates(t *testing.T, p *itest.BrokerProc, name string) map[string]mirror.State {
	t.Helper()
	var st mirror.Status
	if err := json.Unmarshal([]byte(itest.MustCLIOn(t, p, "mirror", "describe", name, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	out := map[string]mirror.State{}
	for _, ps := range st.Partitions {
		out[fmt.Sprintf("%s-%d", ps.Topic, ps.Partition)] = ps.State
	}
	return out
}

// TestMirrorCLITopicPatterns: --topics takes names and regular
// expressions at start, pause, resume, plan and stop, and start --exclude,
// between two built binaries. A pattern is resolved by the broker once
// (the source's topics at start, the mirror's after), the answer says
// what it matched and left alone (b's own orders-local is never taken
// over by a pattern, and keeps its records), a comma inside {} does not
// split a pattern, a pattern matching nothing is refused with nothing
// changed, and a plain name is a name: --topics a.b starts a.b and not
// aXb, which the pattern (a.b) also matches.
func TestMirrorCLITopicPatterns(t *testing.T) {
	t.Parallel()
	a := itest.StartBinary(t, t.TempDir(), "--cluster-id", "cluster-a")
	b := itest.StartBinary(t, t.TempDir())
	pa := itest.IdempotentProducer(t, a.Addr, kgo.AllowAutoTopicCreation())
	for _, topic := range []string{"orders-1", "orders-2", "orders-tmp", "orders-local", "a.b", "aXb", "payments"} {
		itest.ProduceSerially(t, pa, topic, 0, "a", 3)
	}
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr, kgo.AllowAutoTopicCreation()), "orders-local", 0, "b", 2)
	admin := "--admin=" + b.HttpAddr
	cli := func(args ...string) (string, error) { return itest.RunCLI(t, append(args, admin)...) }
	must := func(args ...string) string { t.Helper(); return itest.MustCLIOn(t, b, args...) }
	refused := func(want string, args ...string) {
		t.Helper()
		if out, err := cli(args...); err == nil || !strings.Contains(out, want) {
			t.Fatalf("minibroker %s: %v, want a refusal with %q\n%s", strings.Join(args, " "), err, want, out)
		}
	}

	must("mirror", "create", "from-a", "--source", a.Addr)
	refused("--exclude needs --topics", "mirror", "start", "from-a", "--exclude", "orders-tmp")
	refused("no source topic of mirror from-a to start matches patterns nothing-.*", "mirror", "start", "from-a", "--topics", "nothing-.*")
	refused("HTTP 400", "mirror", "start", "from-a", "--topics", "orders-(")
	refused("unknown flag: --exclude", "mirror", "stop", "from-a", "--topics", "orders-.*", "--exclude", "x")
	if rows := mirrorListRows(t, must("mirror", "list")); len(rows) != 1 || rows[0][1] != "-" {
		t.Fatalf("refused starts started topics: %q", rows)
	}

	out := must("mirror", "start", "from-a", "--topics", "orders-[0-9]{1,2}", "--topics", "orders-(tmp|local)", "--exclude", "orders-tmp")
	if !strings.Contains(out, "topics matched  orders-1,orders-2  (patterns orders-[0-9]{1,2},orders-(tmp|local), excluding orders-tmp)") ||
		!strings.Contains(out, "left alone      orders-local: exists locally") {
		t.Fatalf("start by patterns:\n%s", out)
	}
	must("mirror", "start", "from-a", "--topics", "a.b") // a name
	want := map[string]mirror.State{"orders-1-0": mirror.Mirroring, "orders-2-0": mirror.Mirroring, "a.b-0": mirror.Mirroring}
	itest.WaitFor(t, "orders-1, orders-2 and a.b mirroring", func() bool { return fmt.Sprint(mirrorStates(t, b, "from-a")) == fmt.Sprint(want) })
	if rows := mirrorListRows(t, must("mirror", "list")); len(rows) != 1 ||
		strings.Join(rows[0], " ") != "from-a a.b,orders-1,orders-2 cluster-a "+a.Addr {
		t.Fatalf("list: %q", rows)
	}
	// The pattern (a.b) also matches aXb.
	if out := must("mirror", "start", "from-a", "--topics", "(a.b)"); !strings.Contains(out, "topics matched  a.b,aXb") {
		t.Fatalf("start (a.b):\n%s", out)
	}
	want["aXb-0"] = mirror.Mirroring
	itest.WaitFor(t, "aXb mirroring", func() bool { return fmt.Sprint(mirrorStates(t, b, "from-a")) == fmt.Sprint(want) })

	// Pause and resume by pattern, against the mirror's topics.
	refused("no topic of mirror from-a matches patterns zzz.*", "mirror", "pause", "from-a", "--topics", "zzz.*")
	if got := mirrorStates(t, b, "from-a"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("a refused pause changed states: %v", got)
	}
	if out := must("mirror", "pause", "from-a", "--topics", ".*-1"); !strings.Contains(out, "topics matched  orders-1  (patterns .*-1)") {
		t.Fatalf("pause:\n%s", out)
	}
	want["orders-1-0"] = mirror.Paused
	if got := mirrorStates(t, b, "from-a"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after pause .*-1: %v", got)
	}
	must("mirror", "resume", "from-a", "--topics", "orders-.*")
	want["orders-1-0"] = mirror.Mirroring
	itest.WaitFor(t, "orders-1 resumed", func() bool { return fmt.Sprint(mirrorStates(t, b, "from-a")) == fmt.Sprint(want) })

	// Plan (the stop's dry run) by the same pattern: it covers what the
	// stop will, orders-1 and orders-2 and nothing else, and changes
	// nothing. A plan exits 2 when data is at risk: its output is read
	// either way.
	refused("no topic of mirror from-a matches patterns zzz.*", "mirror", "plan", "from-a", "--topics", "zzz.*")
	out, _ = cli("mirror", "plan", "from-a", "--topics", "orders-[12]")
	if !strings.Contains(out, "topics matched  orders-1,orders-2  (patterns orders-[12])") {
		t.Fatalf("plan by pattern:\n%s", out)
	}
	var planned []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && (f[1] == "0" || f[1] == "PARTITION") {
			planned = append(planned, f[0])
		}
	}
	if strings.Join(planned, ",") != "TOPIC,orders-1,orders-2" {
		t.Fatalf("plan by pattern planned %v:\n%s", planned, out)
	}
	if got := mirrorStates(t, b, "from-a"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("a plan changed states: %v", got)
	}

	// Stop (the failover) by pattern: orders-1 and orders-2, nothing else.
	out = must("mirror", "stop", "from-a", "--topics", "orders-[12]", "--wait")
	if !strings.Contains(out, "topics matched  orders-1,orders-2") || !strings.Contains(out, "failover complete: 2 of 2 partitions STOPPED") {
		t.Fatalf("stop by pattern:\n%s", out)
	}
	want["orders-1-0"], want["orders-2-0"] = mirror.Stopped, mirror.Stopped
	if got := mirrorStates(t, b, "from-a"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after stop orders-[12]: %v", got)
	}
	// b's own topic kept its records and its writes.
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr), "orders-local", 0, "b2", 1)
	if got := itest.ReadValues(t, b.Addr, "orders-local", 0, 0); strings.Join(got, ",") != "b-0,b-1,b2-0" {
		t.Fatalf("b's orders-local: %v", got)
	}
	a.Stop(t, syscall.SIGTERM)
	b.Stop(t, syscall.SIGTERM)
}

// TestMirrorTopicPatternsLeaveLocalTopics: a start's pattern never takes
// over a topic that exists locally and no mirror knows, even with
// allow_truncate: it is left alone (here the only match, so the start is
// refused) and keeps its records, writable. Negative control: with the
// rule off (the test hook auto-creation's rule shares), the same start
// takes the local topic and cuts its 6 records to the source's 4.
func TestMirrorTopicPatternsLeaveLocalTopics(t *testing.T) {
	t.Parallel()
	for _, takeOver := range []bool{false, true} {
		t.Run(fmt.Sprintf("takeOver=%v", takeOver), func(t *testing.T) {
			ctx := context.Background()
			a := minibrokertest.Start(t, minibrokertest.Topic("orders-x", 1))
			itest.ProduceTo(t, a.Addr(), "orders-x", "src", 4)
			b := itest.StartBroker(t, itest.BrokerOptions{HTTP: true, Mirror: mirror.WithTestHooks(mirror.Options{}, takeOverHooks{take: takeOver})})
			itest.Must(t, "create local", kadmCreate(t, b.Addr(), "orders-x", 1))
			itest.ProduceTo(t, b.Addr(), "orders-x", "local", 6)
			c := adminclient.New(adminclient.Options{Addr: b.Broker().HTTPAddr()})
			if _, err := c.CreateMirror(ctx, mirror.CreateRequest{Name: "from-a", Source: []string{a.Addr()}}); err != nil {
				t.Fatal(err)
			}
			_, err := c.StartMirror(ctx, "from-a", mirror.TopicsRequest{TopicPatterns: []string{"orders-.*"}, AllowTruncate: true})
			if takeOver {
				if err != nil {
					t.Fatalf("start with the rule off: %v", err)
				}
				// Taken over: read-only, mirrored, and its log cut from 6
				// records to where it diverges from the source's 4.
				itest.WaitFor(t, "the local topic taken over and cut", func() bool {
					p := itest.MustPartition(t, b, "orders-x", 0)
					mode, owner := p.Mode()
					return mode == partition.Mirrored && owner == "from-a" && p.Offsets().LogEnd == 4
				})
				return
			}
			if adminclient.StatusOf(err) != 400 || !strings.Contains(err.Error(), "orders-x: exists locally") {
				t.Fatalf("start by pattern of a local topic: %v", err)
			}
			if got := itest.ReadValues(t, b.Addr(), "orders-x", 0, 0); strings.Join(got, ",") != strings.Join(itest.Values("local", 6), ",") {
				t.Fatalf("local topic holds %v, want its 6 records", got)
			}
			if mode, _ := itest.MustPartition(t, b, "orders-x", 0).Mode(); mode != partition.Writable {
				t.Fatal("local topic made read-only")
			}
		})
	}
}

// TestMirrorCLIDescribeFailed: `mirror describe --failed` lists the
// FAILED partitions only, with their retries (done in a row, of
// mirror.failed.retry.max.attempts), when the next is due, and the error.
// The source (a built binary with faults on) answers the mirror's fetches
// of orders TOPIC_AUTHORIZATION_FAILED (retriable) until the fault is
// cleared; keep mirrors on.
func TestMirrorCLIDescribeFailed(t *testing.T) {
	t.Parallel()
	a := itest.StartBinary(t, t.TempDir(), "--set", "faults.enable=true")
	b := itest.StartBinary(t, t.TempDir())
	pa := itest.IdempotentProducer(t, a.Addr, kgo.AllowAutoTopicCreation())
	itest.ProduceSerially(t, pa, "orders", 0, "a", 3)
	itest.ProduceSerially(t, pa, "keep", 0, "a", 3)
	itest.MustCLIOn(t, b, "mirror", "create", "from-a", "--source", a.Addr,
		"--mirror-config", mirror.SettingFailedRetryInitialMs+"=100", "--mirror-config", mirror.SettingFailedRetryMaxMs+"=200",
		"--mirror-config", mirror.SettingFailedRetryMaxAttempts+"=2")
	itest.MustCLIOn(t, b, "mirror", "start", "from-a", "--topics", "orders,keep")
	itest.WaitFor(t, "both mirroring", func() bool {
		st := mirrorStates(t, b, "from-a")
		return st["orders-0"] == mirror.Mirroring && st["keep-0"] == mirror.Mirroring
	})
	if out := itest.MustCLIOn(t, b, "mirror", "describe", "from-a", "--failed"); strings.TrimSpace(out) != "mirror from-a: no FAILED partition (of 2)" {
		t.Fatalf("describe --failed with none:\n%s", out)
	}

	itest.MustCLIOn(t, a, "fault", "set", "--kind", "error", "--api", "Fetch", "--error", "TOPIC_AUTHORIZATION_FAILED", "--topic", "orders")
	var failed mirror.Status
	itest.WaitFor(t, "orders FAILED with its 2 retries used up", func() bool {
		// A fresh Status each time: Unmarshal into a used one keeps the
		// fields an answer omits (next_retry_at_ms once it is 0).
		failed = mirror.Status{}
		if err := json.Unmarshal([]byte(itest.MustCLIOn(t, b, "mirror", "describe", "from-a", "--failed", "--json")), &failed); err != nil {
			t.Fatal(err)
		}
		return len(failed.Partitions) == 1 && failed.Partitions[0].Retries == 2 && failed.Partitions[0].NextRetryAt == 0
	})
	if p := failed.Partitions[0]; p.Topic != "orders" || p.State != mirror.Failed || !p.Retriable || !strings.Contains(p.Reason, "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("describe --failed --json: %+v", p)
	}
	out := itest.MustCLIOn(t, b, "mirror", "describe", "from-a", "--failed")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[0] != "mirror from-a: 1 of 2 partitions FAILED" ||
		strings.Join(strings.Fields(lines[1]), " ") != "TOPIC PARTITION RETRIES NEXT RETRY ERROR" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[2]), " "), "orders 0 2/2 none: attempts used up (mirror start) ") ||
		!strings.Contains(lines[2], "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("describe --failed:\n%s", out)
	}
	if st := mirrorStates(t, b, "from-a"); st["keep-0"] != mirror.Mirroring {
		t.Fatalf("keep: %v", st)
	}

	itest.MustCLIOn(t, a, "fault", "clear", "--all")
	itest.MustCLIOn(t, b, "mirror", "start", "from-a", "--topics", "orders")
	itest.WaitFor(t, "orders mirroring again", func() bool { return mirrorStates(t, b, "from-a")["orders-0"] == mirror.Mirroring })
	if out := itest.MustCLIOn(t, b, "mirror", "describe", "from-a", "--failed"); !strings.Contains(out, "no FAILED partition (of 2)") {
		t.Fatalf("describe --failed after the restart:\n%s", out)
	}
	a.Stop(t, syscall.SIGTERM)
	b.Stop(t, syscall.SIGTERM)
}
