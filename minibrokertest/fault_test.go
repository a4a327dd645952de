package minibrokertest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// A fault holds across Kill and Revive (it belongs to the cluster), and is
// cleared when the test that started the cluster ends.
func TestFaultSurvivesCrashAndIsClearedAtCleanup(t *testing.T) {
	var f *minibrokertest.Fault
	t.Run("cluster", func(t *testing.T) {
		c := minibrokertest.Start(t, minibrokertest.Topic("t", 1))
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.DefaultProduceTopic("t"), kgo.RecordRetries(0),
			kgo.DisableIdempotentWrite())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		f = c.Fault(minibrokertest.FaultSpec{Kind: minibrokertest.FaultError, APIKey: minibrokertest.Key(kmsg.Produce),
			ErrorCode: kerr.InvalidRecord.Code})
		c.Kill()
		c.Revive()
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("after Kill and Revive: %v, want the fault's INVALID_RECORD", err)
		}
		if !f.Status().Active {
			t.Fatal("fault inactive before the test ended")
		}
	})
	if st := f.Status(); st.Active || st.Fired != 1 {
		t.Fatalf("status after the test's cleanup %+v: want cleared, fired once", st)
	}
}

// With faults turned off there is no registry.
func TestFaultOff(t *testing.T) {
	c := minibrokertest.Start(t, minibrokertest.Set("faults.enable", "false"))
	if c.Broker().Faults() != nil {
		t.Fatal("registry present with faults.enable=false")
	}
}
