package mirror

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/minibroker/minibroker/internal/mirror"
)

// TestMirrorCLICreateChecksSource: `mirror create` connects to its source
// (ApiVersions, then Metadata for the cluster id) and refuses one that does
// not answer, unless --no-check; every mirror command prints text, and the
// admin API's JSON with --json.
func TestMirrorCLICreateChecksSource(t *testing.T) {
	t.Parallel()
	a := itest.StartBinary(t, t.TempDir(), "--cluster-id", "cluster-a")
	b := itest.StartBinary(t, t.TempDir())
	admin := "--admin=" + b.HttpAddr
	cli := func(args ...string) (string, error) { return itest.RunCLI(t, append(args, admin)...) }
	must := func(args ...string) string {
		t.Helper()
		out, err := cli(args...)
		if err != nil {
			t.Fatalf("minibroker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	// An unreachable source is refused at create, with the reason, and no
	// mirror is left behind.
	out, err := cli("mirror", "create", "dead", "--source", "127.0.0.1:1")
	if err == nil || !strings.Contains(out, "127.0.0.1:1") || !strings.Contains(out, "unreachable") {
		t.Fatalf("create with an unreachable source: err=%v\n%s", err, out)
	}
	if out := must("mirror", "list"); strings.TrimSpace(out) != "" {
		t.Fatalf("a refused create left a mirror: %q", out)
	}
	// --no-check creates it anyway (the source may come up later).
	out = must("mirror", "create", "later", "--source", "127.0.0.1:1", "--no-check")
	if !strings.Contains(out, "created mirror later") || !strings.Contains(out, "not checked") {
		t.Fatalf("create --no-check output:\n%s", out)
	}

	// A live source: text names its cluster id; --json is the Status.
	out = must("mirror", "create", "from-a", "--source", a.Addr)
	if !strings.Contains(out, "created mirror from-a") || !strings.Contains(out, "cluster-a") || strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Fatalf("create output:\n%s", out)
	}
	var st mirror.Status
	if err := json.Unmarshal([]byte(must("mirror", "describe", "from-a", "--json")), &st); err != nil || st.SourceClusterID != "cluster-a" {
		t.Fatalf("describe --json: %v %+v", err, st)
	}
	if err := json.Unmarshal([]byte(must("mirror", "create", "json-a", "--source", a.Addr, "--json")), &st); err != nil ||
		st.Name != "json-a" || st.SourceClusterID != "cluster-a" {
		t.Fatalf("create --json: %v %+v", err, st)
	}
	// list: the source's cluster id as create found it (none for the
	// unchecked one) and its bootstrap servers.
	var sums []mirror.Summary
	if err := json.Unmarshal([]byte(must("mirror", "list", "--json")), &sums); err != nil || len(sums) != 3 {
		t.Fatalf("list --json: %v %+v", err, sums)
	}
	for i, want := range []mirror.Summary{{Name: "from-a", SourceClusterID: "cluster-a", Source: []string{a.Addr}},
		{Name: "json-a", SourceClusterID: "cluster-a", Source: []string{a.Addr}}, {Name: "later", Source: []string{"127.0.0.1:1"}}} {
		if got := sums[i]; got.Name != want.Name || got.SourceClusterID != want.SourceClusterID || strings.Join(got.Source, ",") != want.Source[0] ||
			len(got.Topics) != 0 {
			t.Fatalf("list --json [%d]: %+v, want %+v", i, got, want)
		}
	}
	var rows []string
	for _, r := range mirrorListRows(t, must("mirror", "list")) {
		rows = append(rows, strings.Join(r, " "))
	}
	if strings.Join(rows, "\n") != "from-a - cluster-a "+a.Addr+"\njson-a - cluster-a "+a.Addr+"\nlater - - 127.0.0.1:1" {
		t.Fatalf("list: %q", rows)
	}
	var names []string
	if err := json.Unmarshal([]byte(must("mirror", "list", "--names", "--json")), &names); err != nil || strings.Join(names, ",") != "from-a,json-a,later" {
		t.Fatalf("list --names --json: %v %v", err, names)
	}
	if out := must("mirror", "list", "--names"); strings.Join(strings.Fields(out), ",") != "from-a,json-a,later" {
		t.Fatalf("list --names: %q", out)
	}
	if out := must("mirror", "describe", "from-a"); !strings.Contains(out, "mirror from-a") || !strings.Contains(out, "TOPIC") {
		t.Fatalf("describe text:\n%s", out)
	}
	if out := must("mirror", "delete", "later"); strings.TrimSpace(out) != "deleted mirror later" {
		t.Fatalf("delete output: %q", out)
	}
	var del map[string]string
	if err := json.Unmarshal([]byte(must("mirror", "delete", "json-a", "--json")), &del); err != nil || del["deleted"] != "json-a" {
		t.Fatalf("delete --json: %v %v", err, del)
	}
	a.Stop(t, syscall.SIGTERM)
	b.Stop(t, syscall.SIGTERM)
}
