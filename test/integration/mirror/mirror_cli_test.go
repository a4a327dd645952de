package mirror

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/mirror"
)

// TestMirrorCLIFailover drives a failover between two built binaries with
// the operator's commands: create, start, describe, stop, list, delete.
func TestMirrorCLIFailover(t *testing.T) {
	t.Parallel()
	a := itest.StartBinary(t, t.TempDir(), "--cluster-id", "cluster-a")
	b := itest.StartBinary(t, t.TempDir())
	pa := itest.IdempotentProducer(t, a.Addr, kgo.AllowAutoTopicCreation())
	itest.ProduceSerially(t, pa, "orders", 0, "a", 5)

	admin := "--admin=" + b.HttpAddr
	mustCLI := func(args ...string) string {
		t.Helper()
		out, err := itest.RunCLI(t, append(args, admin)...)
		if err != nil {
			t.Fatalf("minibroker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	mustCLI("mirror", "create", "from-a", "--source", a.Addr)
	if out, err := itest.RunCLI(t, "mirror", "create", "from-a", "--source", a.Addr, admin); err == nil || !strings.Contains(out, "already exists") {
		t.Fatalf("duplicate create: %v %s", err, out)
	}
	mustCLI("mirror", "start", "from-a", "--topics", "orders")
	// KIP-1279's columns: mirror, topics, source cluster id, source
	// bootstrap; --names (-q) the names alone, for scripts.
	if rows := mirrorListRows(t, mustCLI("mirror", "list")); len(rows) != 1 || strings.Join(rows[0], " ") != "from-a orders cluster-a "+a.Addr {
		t.Fatalf("list: %q", rows)
	}
	if out := mustCLI("mirror", "list", "-q"); strings.TrimSpace(out) != "from-a" {
		t.Fatalf("list -q: %q", out)
	}
	// Describe until caught up.
	var st mirror.Status
	for i := 0; i < 200; i++ {
		if err := json.Unmarshal([]byte(mustCLI("mirror", "describe", "from-a", "--json")), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Partitions) == 1 && st.Partitions[0].State == mirror.Mirroring && st.Partitions[0].LocalLogEndOffset == 5 {
			break
		}
	}
	if p := st.Partitions[0]; p.LocalLogEndOffset != 5 || p.SourceHighWater != 5 || p.LagRecords != 0 {
		t.Fatalf("describe: %+v", p)
	}
	if out, err := itest.RunCLI(t, "mirror", "delete", "from-a", admin); err == nil || !strings.Contains(out, "stop the mirror first") {
		t.Fatalf("delete while mirroring: %v %s", err, out)
	}
	out := mustCLI("mirror", "stop", "from-a", "--topics", "orders", "--wait")
	if !strings.Contains(out, "STOPPED") {
		t.Fatalf("stop output: %s", out)
	}
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr), "orders", 0, "b", 5)
	got := itest.ReadValues(t, b.Addr, "orders", 0, 0)
	if strings.Join(got, ",") != strings.Join(itest.Concat(itest.Values("a", 5), itest.Values("b", 5)), ",") {
		t.Fatalf("after CLI failover: %v", got)
	}
	mustCLI("mirror", "delete", "from-a")
	for _, args := range [][]string{{"mirror", "list"}, {"mirror", "list", "--names"}} {
		if out := mustCLI(args...); strings.TrimSpace(out) != "" {
			t.Fatalf("%v after delete: %q", args, out)
		}
	}
	if out, err := itest.RunCLI(t, "mirror", "describe", "nope", admin); err == nil || !strings.Contains(out, "HTTP 404") {
		t.Fatalf("describe unknown: %v %s", err, out)
	}
	a.Stop(t, syscall.SIGTERM)
	b.Stop(t, syscall.SIGTERM)
}
