package tools

// dump-log and verify-log against real brokers' data directories: the
// built binary's exit statuses, dumping a live data directory, and
// verify-log on a failover with and without the MIRROR_PID_RESET barrier.

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// startExpiring starts a broker whose producer state expires after
// expireMs of idleness, checked every 100 ms; skipBarrier makes its
// mirrors leave the barrier out (the negative control).
func startExpiring(t *testing.T, expireMs string, skipBarrier bool) *itest.RawCluster {
	t.Helper()
	return itest.StartBroker(t, itest.BrokerOptions{
		Config: func(cfg *config.Config) {
			for _, kv := range [][2]string{{"producer.id.expiration.ms", expireMs}, {"producer.id.expiration.check.interval.ms", "100"}} {
				if err := cfg.Set(kv[0], kv[1]); err != nil {
					t.Fatal(err)
				}
			}
		},
		Mirror: mirror.WithTestHooks(mirror.Options{}, itest.MirrorHooks{NoBarrier: skipBarrier}),
	})
}

// failoverWithExpiry: A's idempotent producer (producer id 0) writes five
// batches; B mirrors A and fails over, with or without the barrier; once
// B has expired A's producer, a new producer on B (producer id 0 again)
// writes five batches from sequence 0. Without the barrier B accepts them
// only because it forgot A's producer: the log then holds one producer
// id restarting its sequence in one epoch, and a mirror of B with the
// default expiration (seed scenario 1) would take both as one producer.
// It returns B's partition directory.
func failoverWithExpiry(t *testing.T, withBarrier bool) (string, *itest.RawCluster) {
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "orders", 0, "a", 5)
	b := startExpiring(t, "1000", !withBarrier)
	ctx := context.Background()
	if err := itest.MirrorOn(b).Create("from-a", []string{a.Addr()}, ""); err != nil {
		t.Fatal(err)
	}
	if err := itest.MirrorOn(b).Start(ctx, "from-a", []string{"orders"}); err != nil {
		t.Fatal(err)
	}
	itest.WaitMirrored(t, a, b, "orders", 1)
	if err := itest.MirrorOn(b).Stop("from-a", nil); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(itest.NewClient(t, b.Addr()))
	deadline := time.Now().Add(15 * time.Second)
	for {
		ps, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"orders": {0: {}}})
		n := 0
		ps.EachPartition(func(p kadm.DescribedProducersPartition) { n += len(p.ActiveProducers) })
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B never expired A's producer: %d producers, %v", n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "orders", 0, "b", 5)
	itest.AssertValues(t, b, "orders", 0, itest.Concat(itest.Values("a", 5), itest.Values("b", 5)))
	return filepath.Join(b.Cfg.DataDir, "orders-0"), b
}

func TestVerifyLogFailoverWithoutBarrier(t *testing.T) {
	dir, b := failoverWithExpiry(t, false)
	// The chain goes on: C mirrors B (default expiration) and receives
	// the same bytes, the collision again at C. verify-log finds the
	// collision in both logs.
	c := minibrokertest.Start(t)
	c.Mirror("from-b", b.Addr()).Start("orders")
	itest.WaitMirrored(t, b, c, "orders", 1)
	for _, d := range []string{dir, filepath.Join(c.DataDir(), "orders-0")} {
		out, _, code := itest.RunTool(t, "verify-log", d)
		if code != 1 || !strings.Contains(out, "offset 5 producerId 0: sequence_restart [impossible]: epoch 0: sequence 0 after sequence 4") {
			t.Fatalf("%s: exit %d, want 1 with the restart at offset 5:\n%s", d, code, out)
		}
	}
	// Judged with B's own expiration, the history is one a broker
	// accepts: the producer was forgotten before id 0 came back.
	if out, _, code := itest.RunTool(t, "verify-log", "--producer-id-expiration-ms", "1000", dir); code != 0 {
		t.Fatalf("with B's expiration: exit %d\n%s", code, out)
	}
	js, _, code := itest.RunTool(t, "verify-log", "--json", dir)
	if code != 1 {
		t.Fatalf("--json exit %d", code)
	}
	var kinds []string
	sc := bufio.NewScanner(strings.NewReader(js))
	for sc.Scan() {
		var obj map[string]any
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		if obj["kind"] == "finding" {
			kinds = append(kinds, obj["finding"].(string))
		}
	}
	if strings.Join(kinds, ",") != "sequence_restart" {
		t.Fatalf("findings %v\n%s", kinds, js)
	}
}

func TestVerifyLogFailoverWithBarrier(t *testing.T) {
	dir, b := failoverWithExpiry(t, true)
	c := minibrokertest.Start(t)
	c.Mirror("from-b", b.Addr()).Start("orders")
	itest.WaitMirrored(t, b, c, "orders", 1)
	for _, d := range []string{dir, filepath.Join(c.DataDir(), "orders-0")} {
		out, _, code := itest.RunTool(t, "verify-log", d)
		if code != 0 || !strings.Contains(out, "1 MIRROR_PID_RESET barriers: clean") {
			t.Fatalf("%s: exit %d, want 0:\n%s", d, code, out)
		}
	}
}

// TestLogToolsCLI runs dump-log and verify-log on a live broker's data
// directory and checks the exit statuses.
func TestLogToolsCLI(t *testing.T) {
	c := minibrokertest.Start(t, minibrokertest.Topic("cli", 1))
	itest.ProduceSerially(t, itest.IdempotentProducer(t, c.Addr()), "cli", 0, "v", 3)
	dir := filepath.Join(c.DataDir(), "cli-0")

	out, errOut, code := itest.RunTool(t, "dump-log", "--print-data", dir) // live: the broker is running
	if code != 0 || !strings.Contains(out, `payload: "v-2"`) {
		t.Fatalf("dump-log on a live partition: exit %d\n%s\n%s", code, out, errOut)
	}
	seg := filepath.Join(dir, "00000000000000000000.log")
	js, _, code := itest.RunTool(t, "dump-log", "--json", seg)
	if code != 0 {
		t.Fatalf("dump-log --json: exit %d", code)
	}
	batches := 0
	for _, line := range strings.Split(strings.TrimSpace(js), "\n") {
		var b map[string]any
		if err := json.Unmarshal([]byte(line), &b); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if b["kind"] == "batch" {
			batches++
		}
	}
	if batches != 3 {
		t.Fatalf("%d batches in\n%s", batches, js)
	}
	if out, _, code := itest.RunTool(t, "verify-log", dir); code != 0 {
		t.Fatalf("verify-log: exit %d\n%s", code, out)
	}
	// A copy with one flipped byte in the last batch: dump-log reports it
	// and exits 1; verify-log reports a corrupt_batch finding.
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0xff
	bad := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _, code := itest.RunTool(t, "dump-log", bad); code != 1 || !strings.Contains(out, "isvalid: false") {
		t.Fatalf("dump-log on a damaged copy: exit %d\n%s", code, out)
	}
	if out, _, code := itest.RunTool(t, "verify-log", bad); code != 1 || !strings.Contains(out, "corrupt_batch [damage]") {
		t.Fatalf("verify-log on a damaged copy: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"dump-log"},
		{"dump-log", "--no-such-flag", dir},
		{"dump-log", filepath.Join(dir, "missing.log")},
		{"dump-log", filepath.Join(c.DataDir())}, // not a partition directory: nothing it knows, but readable
		{"verify-log"},
		{"verify-log", filepath.Join(dir, "missing")},
		{"verify-log", filepath.Join(dir, "leader-epoch-checkpoint")},
		{"verify-log", c.DataDir()}, // the data directory, not a partition
	} {
		_, errOut, code := itest.RunTool(t, args...)
		want := 2
		if args[0] == "dump-log" && len(args) == 2 && args[1] == c.DataDir() {
			want = 0
		}
		if code != want {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, want, errOut)
		}
	}
}

// TestVerifyLogSwallowedFailoverLeavesNoTrace documents verify-log's
// limit on the active-passive negative control (no barrier, default
// expiration): B's new producer, which drew A's producer id, is answered
// as a duplicate of A's batches, so none of its records reach the log.
// The log holds only A's history, which is consistent: there is nothing
// for verify-log to find, and it exits 0.
func TestVerifyLogSwallowedFailoverLeavesNoTrace(t *testing.T) {
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "orders", 0, "a0", 5)
	b := itest.StartBroker(t, itest.BrokerOptions{Mirror: itest.NoBarrier()})
	ctx := context.Background()
	if err := itest.MirrorOn(b).Create("from-a", []string{a.Addr()}, ""); err != nil {
		t.Fatal(err)
	}
	if err := itest.MirrorOn(b).Start(ctx, "from-a", []string{"orders"}); err != nil {
		t.Fatal(err)
	}
	itest.WaitMirrored(t, a, b, "orders", 1)
	if err := itest.MirrorOn(b).Stop("from-a", nil); err != nil {
		t.Fatal(err)
	}
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "orders", 0, "b0", 5) // swallowed
	out, _, code := itest.RunTool(t, "verify-log", filepath.Join(b.Cfg.DataDir, "orders-0"))
	if code != 0 || !strings.Contains(out, "5 batches, 0 MIRROR_PID_RESET barriers: clean") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
