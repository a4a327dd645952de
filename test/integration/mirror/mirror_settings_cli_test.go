package mirror

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorSettingsCLI: mirror settings through the built binary's CLI:
// an unknown name or a bad value is refused at create and at alter
// (HTTP 400, naming the setting, nothing made or changed); describe shows
// every setting, text and JSON; alter changes those named and resets;
// start without topics follows mirror.topics.include.
func TestMirrorSettingsCLI(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1), minibrokertest.Topic("other", 1))
	itest.ProduceTo(t, a.Addr(), "orders", "o", 4)
	b := itest.StartBinary(t, t.TempDir())
	admin := "--admin=" + b.HttpAddr
	for _, bad := range []struct{ kv, want string }{
		{"nope=1", `unknown mirror setting "nope"`},
		{mirror.SettingMetadataRefreshMs + "=soon", mirror.SettingMetadataRefreshMs},
		{mirror.SettingTopicsInclude + "=orders(", mirror.SettingTopicsInclude},
	} {
		out, err := itest.RunCLI(t, "mirror", "create", "from-a", "--source", a.Addr(), "--mirror-config", bad.kv, admin)
		if err == nil || !strings.Contains(out, bad.want) || !strings.Contains(out, "400") {
			t.Fatalf("create with %s: %v\n%s", bad.kv, err, out)
		}
	}
	if out, err := itest.RunCLI(t, "mirror", "list", admin); err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("a refused create made a mirror: %v %q", err, out)
	}
	itest.MustCLIOn(t, b, "mirror", "create", "from-a", "--source", a.Addr(), "--mirror-config", mirror.SettingTopicsInclude+"=orders",
		"--mirror-config", mirror.SettingMetadataRefreshMs+"=200")
	out := itest.MustCLIOn(t, b, "mirror", "describe", "from-a")
	for _, want := range []string{"mirror.topics.include=orders", "mirror.topics.exclude=__.*", "mirror.metadata.refresh.interval.ms=200",
		"mirror.replication.throttled.rate=0", "mirror.topic.properties.exclude=follower.replication.throttled.replicas,"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe lacks %q:\n%s", want, out)
		}
	}
	if out, err := itest.RunCLI(t, "mirror", "alter", "from-a", "--mirror-config", mirror.SettingThrottledRate+"=-1", admin); err == nil ||
		!strings.Contains(out, mirror.SettingThrottledRate) {
		t.Fatalf("alter with a bad value: %v\n%s", err, out)
	}
	itest.MustCLIOn(t, b, "mirror", "alter", "from-a", "--mirror-config", mirror.SettingThrottledRate+"=5000000",
		"--mirror-config-reset", mirror.SettingMetadataRefreshMs)
	var st mirror.Status
	itest.Must(t, "json", json.Unmarshal([]byte(itest.MustCLIOn(t, b, "mirror", "describe", "from-a", "--json")), &st))
	if st.Config[mirror.SettingThrottledRate] != "5000000" || st.Config[mirror.SettingMetadataRefreshMs] != "30000" ||
		st.Config[mirror.SettingTopicsInclude] != "orders" || len(st.Config) != len(mirror.SettingsTable()) {
		t.Fatalf("describe --json config after alter: %v", st.Config)
	}
	itest.MustCLIOn(t, b, "mirror", "start", "from-a")
	itest.WaitFor(t, "orders mirrored", func() bool {
		var st mirror.Status
		json.Unmarshal([]byte(itest.MustCLIOn(t, b, "mirror", "describe", "from-a", "--json")), &st)
		return len(st.Partitions) == 1 && st.Partitions[0].Topic == "orders" && st.Partitions[0].LocalLogEndOffset == 4
	})
	if strings.Contains(itest.MustCLIOn(t, b, "mirror", "describe", "from-a"), "other") {
		t.Fatal("a topic mirror.topics.include does not select was mirrored")
	}
}

// TestStaticMirrorSettings: a static mirror with mirror-config and no
// topics follows its filters; a bad setting in the file is refused (the
// mirror is not made, the broker serves on and logs why).
func TestStaticMirrorSettings(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1), minibrokertest.Topic("__internal", 1))
	itest.ProduceTo(t, a.Addr(), "orders", "o", 3)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mb.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`mirrors:
  - name: from-a
    source: [%q]
    mirror-config:
      mirror.topics.include: ".*"
      mirror.metadata.refresh.interval.ms: "100"
  - name: bad
    source: [%q]
    mirror-config:
      mirror.topics.includ: ".*"
`, a.Addr(), a.Addr())), 0o644)
	b := itest.StartBinary(t, filepath.Join(dir, "data"), "--config", cfg)
	itest.WaitFor(t, "orders mirrored by the static mirror", func() bool {
		var st mirror.Status
		json.Unmarshal([]byte(itest.MustCLIOn(t, b, "mirror", "describe", "from-a", "--json")), &st)
		return len(st.Partitions) == 1 && st.Partitions[0].Topic == "orders" && st.Partitions[0].LocalLogEndOffset == 3
	})
	// The static mirror follows its filters: its topics, then the marker.
	if rows := mirrorListRows(t, itest.MustCLIOn(t, b, "mirror", "list")); len(rows) != 1 ||
		strings.Join(rows[0], " ") != "from-a orders,+"+mirror.SettingTopicsInclude+" "+a.ClusterID()+" "+a.Addr() {
		t.Fatalf("list: %q", rows)
	}
	if out := itest.MustCLIOn(t, b, "mirror", "list", "--names"); strings.TrimSpace(out) != "from-a" {
		t.Fatalf("list --names: %q", out)
	}
	if !strings.Contains(b.Output(), `unknown mirror setting \"mirror.topics.includ\"`) {
		t.Fatalf("the bad static mirror's refusal is not logged:\n%s", b.Output())
	}
}
