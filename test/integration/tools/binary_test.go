package tools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The built binary serves a real client, shuts down cleanly on SIGTERM
// (exit 0), and has every record after a restart.
func TestBinaryServeSigtermRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := itest.StartBinary(t, dir, "--set", "num.partitions=3", "--cluster-id", "test-cluster-1")
	cl := itest.NewClient(t, p.Addr, kgo.DefaultProduceTopic("bin"), kgo.AllowAutoTopicCreation())
	var recs []*kgo.Record
	for i := 0; i < 300; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// /healthz and /metrics on the HTTP listener.
	health := itest.HttpGet(t, "http://"+p.HttpAddr+"/healthz")
	if !strings.Contains(health, `"cluster_id":"test-cluster-1"`) {
		t.Fatalf("healthz: %s", health)
	}
	metrics := itest.HttpGet(t, "http://"+p.HttpAddr+"/metrics")
	for _, want := range []string{`minibroker_requests_total{api="Produce"}`, "minibroker_partitions 154", // and the internal topics' 151
		`minibroker_partition_log_end_offset{partition="0",topic="bin"}`, "minibroker_connections"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	cl.Close()
	if err := p.Stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM exit: %v\n%s", err, p.Output())
	}
	if !strings.Contains(p.Output(), "stopped") {
		t.Fatalf("no clean stop logged\n%s", p.Output())
	}

	p2 := itest.StartBinary(t, dir)
	got := itest.ConsumeAll(t, p2.Addr, "bin", 300)
	if len(got) != 300 {
		t.Fatalf("after restart: %d records", len(got))
	}
	p2.Stop(t, syscall.SIGTERM)
}

// A --cluster-id that contradicts meta.properties is refused.
func TestBinaryClusterIDMismatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := itest.StartBinary(t, dir, "--cluster-id", "first")
	p.Stop(t, syscall.SIGTERM)
	out, err := exec.Command(itest.MinibrokerBinary(t), "serve", "--data-dir", dir, "--listen", "127.0.0.1:0",
		"--http-listen", "", "--cluster-id", "second").CombinedOutput()
	if err == nil {
		t.Fatal("broker started with a contradicting cluster id")
	}
	if !strings.Contains(string(out), `contradicts cluster.id "first"`) {
		t.Fatalf("unclear error: %s", out)
	}
	meta, _ := os.ReadFile(filepath.Join(dir, "meta.properties"))
	if !strings.Contains(string(meta), "cluster.id=first") {
		t.Fatalf("meta.properties overwritten: %s", meta)
	}
}

func TestBinaryVersionAndBadFlags(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(itest.MinibrokerBinary(t), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "minibroker ") {
		t.Fatalf("version: %v %s", err, out)
	}
	out, err = exec.Command(itest.MinibrokerBinary(t), "serve", "--set", "log.segment.bytes=lots").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "log.segment.bytes") {
		t.Fatalf("bad --set accepted: %s", out)
	}
}
