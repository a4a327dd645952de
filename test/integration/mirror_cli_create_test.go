package integration

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/minibroker/minibroker/internal/mirror"
)

// TestMirrorCLICreateChecksSource: `mirror create` connects to its source
// (ApiVersions, then Metadata for the cluster id) and refuses one that does
// not answer, unless --no-check; every mirror command prints text, and the
// admin API's JSON with --json.
func TestMirrorCLICreateChecksSource(t *testing.T) {
	t.Parallel()
	a := startBinary(t, t.TempDir(), "--cluster-id", "cluster-a")
	b := startBinary(t, t.TempDir())
	admin := "--admin=" + b.httpAddr
	cli := func(args ...string) (string, error) { return runCLI(t, append(args, admin)...) }
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
	out = must("mirror", "create", "from-a", "--source", a.addr)
	if !strings.Contains(out, "created mirror from-a") || !strings.Contains(out, "cluster-a") || strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Fatalf("create output:\n%s", out)
	}
	var st mirror.Status
	if err := json.Unmarshal([]byte(must("mirror", "describe", "from-a", "--json")), &st); err != nil || st.SourceClusterID != "cluster-a" {
		t.Fatalf("describe --json: %v %+v", err, st)
	}
	if err := json.Unmarshal([]byte(must("mirror", "create", "json-a", "--source", a.addr, "--json")), &st); err != nil ||
		st.Name != "json-a" || st.SourceClusterID != "cluster-a" {
		t.Fatalf("create --json: %v %+v", err, st)
	}
	var names []string
	if err := json.Unmarshal([]byte(must("mirror", "list", "--json")), &names); err != nil || strings.Join(names, ",") != "from-a,json-a,later" {
		t.Fatalf("list --json: %v %v", err, names)
	}
	if out := must("mirror", "list"); strings.Join(strings.Fields(out), ",") != "from-a,json-a,later" {
		t.Fatalf("list: %q", out)
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
	a.stop(t, syscall.SIGTERM)
	b.stop(t, syscall.SIGTERM)
}
