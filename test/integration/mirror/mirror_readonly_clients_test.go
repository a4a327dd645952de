package mirror

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/IBM/sarama"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirroredTopicRefusesEveryClientFast: a produce to a mirrored
// partition answers POLICY_VIOLATION with the mirror's name, which sarama
// and librdkafka (kcat) treat as permanent: they fail at once instead of
// retrying until their delivery timeout. (kgo is checked in
// TestMirrorActivePassive.)
func TestMirroredTopicRefusesEveryClientFast(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("ro", 1))
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "ro", 0, "a", 2)
	b := minibrokertest.Start(t)
	b.Mirror("from-a", a.Addr()).Start("ro").WaitCaughtUp(itest.Timeout)

	t.Run("sarama", func(t *testing.T) {
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V3_6_0_0
		cfg.Producer.Return.Successes = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Retry.Max = 5
		cfg.Producer.Retry.Backoff = time.Second
		p, err := sarama.NewSyncProducer([]string{b.Addr()}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		start := time.Now()
		_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: "ro", Value: sarama.StringEncoder("x")})
		if !errors.Is(err, sarama.ErrPolicyViolation) {
			t.Fatalf("sarama: %v, want POLICY_VIOLATION", err)
		}
		if d := time.Since(start); d > 3*time.Second { // 5 retries would take > 5 s
			t.Fatalf("sarama retried for %v", d)
		}
	})
	t.Run("kcat", func(t *testing.T) {
		if _, err := exec.LookPath("kcat"); err != nil {
			t.Fatal("kcat not installed: run `make deps`")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "kcat", "-P", "-b", b.Addr(), "-t", "ro", "-p", "0",
			"-X", "message.timeout.ms=30000", "-X", "retries=10")
		cmd.Stdin = strings.NewReader("x\n")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "olicy") {
			t.Fatalf("kcat: %v\n%s", err, out)
		}
		if d := time.Since(start); d > 10*time.Second { // the timeout is 30 s
			t.Fatalf("kcat retried for %v:\n%s", d, out)
		}
	})
	if got := itest.LogEnd(b, "ro", 0); got != 2 {
		t.Fatalf("mirrored partition changed: log end %d", got)
	}
}
