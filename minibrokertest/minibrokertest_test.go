package minibrokertest_test

import (
	"context"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/minibroker/minibroker/minibrokertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Parallel tests each get their own cluster; Close leaves no goroutine
// (TestMain checks) and New's temp dir is removed.
func TestParallelClusters(t *testing.T) {
	for i := 0; i < 4; i++ {
		t.Run("", func(t *testing.T) {
			t.Parallel()
			c := minibrokertest.Start(t, minibrokertest.Topic("t", 2), minibrokertest.Set("log.segment.bytes", "1048576"))
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.DefaultProduceTopic("t"))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if c.ClusterID() == "" || c.DataDir() == "" {
				t.Fatal("identity missing")
			}
		})
	}
}

func TestNewRemovesItsDataDir(t *testing.T) {
	c, err := minibrokertest.New()
	if err != nil {
		t.Fatal(err)
	}
	dir := c.DataDir()
	c.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("data dir %s left behind: %v", dir, err)
	}
}

func TestRestartKeepsDataAndPort(t *testing.T) {
	c := minibrokertest.Start(t, minibrokertest.Topic("t", 1))
	addr := c.Addr()
	cl, _ := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"))
	defer cl.Close()
	cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")})
	c.Restart()
	if c.Addr() != addr {
		t.Fatalf("address changed: %s → %s", addr, c.Addr())
	}
	// The same client reconnects and keeps producing.
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}
