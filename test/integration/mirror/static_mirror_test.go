package mirror

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestStaticMirrorFromConfig: a mirror declared in the config file is
// created and started by the broker; after a failover, a restart with the
// same file does not restart it.
func TestStaticMirrorFromConfig(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "orders", 0, "a", 3)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mb.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("mirrors:\n  - name: from-a\n    source: [%q]\n    topics: [orders]\n", a.Addr())), 0o644)
	data := filepath.Join(dir, "data")
	b := itest.StartBinary(t, data, "--config", cfg)
	deadline := time.Now().Add(itest.Timeout)
	adm := kadm.NewClient(itest.NewClient(t, b.Addr))
	for {
		offs, err := adm.ListEndOffsets(context.Background(), "orders")
		if o, ok := offs.Lookup("orders", 0); err == nil && ok && o.Err == nil && o.Offset >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("static mirror never caught up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out, err := itest.RunCLI(t, "mirror", "stop", "from-a", "--all-topics", "--wait", "--admin", b.HttpAddr); err != nil {
		t.Fatalf("stop: %v %s", err, out)
	}
	b.Stop(t, syscall.SIGTERM)
	b = itest.StartBinary(t, data, "--config", cfg)
	time.Sleep(300 * time.Millisecond)
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr), "orders", 0, "b", 2) // still writable
	got, want := itest.ReadValues(t, b.Addr, "orders", 0, 0), itest.Concat(itest.Values("a", 3), itest.Values("b", 2))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after restart: %v, want %v", got, want)
	}
	b.Stop(t, syscall.SIGTERM)
}
