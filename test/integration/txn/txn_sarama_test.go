package txn

import (
	"slices"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/IBM/sarama"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestTxnSarama: sarama's transactional producer commits and aborts;
// read_committed readers see exactly the committed records, before and
// after a crash.
func TestTxnSarama(t *testing.T) {
	const topic = "tx-sarama"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 1))
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Transaction.ID = "sarama-txn"
	cfg.Producer.Transaction.Retry.Backoff = 20 * time.Millisecond
	cfg.Net.MaxOpenRequests = 1
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond

	run := func(stage string, commit bool, values ...string) {
		t.Helper()
		p, err := sarama.NewSyncProducer([]string{c.Addr()}, cfg)
		if err != nil {
			t.Fatalf("%s: producer: %v", stage, err)
		}
		defer p.Close()
		if err := p.BeginTxn(); err != nil {
			t.Fatalf("%s: begin: %v", stage, err)
		}
		for _, v := range values {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(v)}); err != nil {
				t.Fatalf("%s: send: %v", stage, err)
			}
		}
		if commit {
			err = p.CommitTxn()
		} else {
			err = p.AbortTxn()
		}
		if err != nil {
			t.Fatalf("%s: end (commit=%v): %v", stage, commit, err)
		}
	}
	run("first", true, "s1", "s2")
	run("second", false, "aborted")
	run("third", true, "s3")
	want := []string{"s1", "s2", "s3"}
	if got := itest.ReadTxnValues(t, c.Addr(), topic, true); !slices.Equal(got, want) {
		t.Fatalf("read_committed: %q, want %q", got, want)
	}
	c.Kill()
	c.Revive()
	run("after crash", true, "s4")
	run("after crash abort", false, "aborted-2")
	want = append(want, "s4")
	if got := itest.ReadTxnValues(t, c.Addr(), topic, true); !slices.Equal(got, want) {
		t.Fatalf("read_committed after a crash: %q, want %q", got, want)
	}
	if got := itest.ReadTxnValues(t, c.Addr(), topic, false); len(got) != 6 {
		t.Fatalf("read_uncommitted sees %d records, want 6 (aborted ones included): %q", len(got), got)
	}
}
