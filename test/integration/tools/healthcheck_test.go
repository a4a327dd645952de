package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"
)

// `minibroker healthcheck` (the container image's HEALTHCHECK) exits 0 when
// the broker answers ApiVersions, and 1 when what answers is not a Kafka
// listener (the broker's own HTTP port), when nothing listens, and after
// the broker stopped.
func TestBinaryHealthcheck(t *testing.T) {
	t.Parallel()
	bin := itest.MinibrokerBinary(t)
	p := itest.StartBinary(t, t.TempDir())
	run := func(args ...string) (string, int) {
		out, err := exec.Command(bin, append([]string{"healthcheck", "--timeout", "2s"}, args...)...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	if out, code := run("--broker", p.Addr); code != 0 || !strings.Contains(out, "answered ApiVersions") {
		t.Fatalf("healthy broker: exit %d: %s", code, out)
	}
	// --config: the listener of a config file, a wildcard host asked on loopback.
	port := p.Addr[strings.LastIndex(p.Addr, ":")+1:]
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("listen: 0.0.0.0:"+port+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := run("--config", cfg); code != 0 {
		t.Fatalf("--config: exit %d: %s", code, out)
	}
	// … or the first of Kafka's listeners.
	if err := os.WriteFile(cfg, []byte("kafka:\n  listeners: INSIDE://0.0.0.0:"+port+",OUTSIDE://127.0.0.1:1\n"+
		"  listener.security.protocol.map: INSIDE:PLAINTEXT,OUTSIDE:PLAINTEXT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := run("--config", cfg); code != 0 {
		t.Fatalf("--config with listeners: exit %d: %s", code, out)
	}
	// Negative controls: an HTTP server is not a Kafka listener.
	if out, code := run("--broker", p.HttpAddr); code != 1 {
		t.Fatalf("HTTP port taken for a Kafka listener: exit %d: %s", code, out)
	}
	p.Stop(t, syscall.SIGTERM)
	if out, code := run("--broker", p.Addr); code != 1 || !strings.Contains(out, "healthcheck "+p.Addr) {
		t.Fatalf("stopped broker: exit %d: %s", code, out)
	}
}
