package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// partitionStatus is a mirror's status of topic partition 0.
func partitionStatus(t *testing.T, m *mirror.Manager, topic string) mirror.PartitionStatus {
	t.Helper()
	st, err := m.Describe("from-a")
	itest.Must(t, "describe", err)
	for _, p := range st.Partitions {
		if p.Topic == topic && p.Partition == 0 {
			return p
		}
	}
	t.Fatalf("%s-0 not in describe", topic)
	return mirror.PartitionStatus{}
}

// TestMirrorSourceTopicDeletedFails (KIP-1279's deleted
// source topic): with mirror.topic.deleted.policy at its default (fail),
// a mirrored topic the source deleted goes FAILED, read-only, its records
// kept and no barrier written; describe and the log say so; it stays so
// over more refreshes (never retried, never failed over by itself); the
// operator's `mirror stop` then fails it over (one barrier, writable).
// Another topic of the mirror keeps mirroring. The other policy (stop,
// the failover made without an operator) is TestMirrorSourceTopicDeleted.
func TestMirrorSourceTopicDeletedFails(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.InfoLevel)
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1), minibrokertest.Topic("payments", 1))
	b := minibrokertest.Start(t, minibrokertest.Logger(zap.New(core)))
	itest.ProduceTo(t, a.Addr(), "orders", "a", 5)
	m := createAutoMirror(t, b, a.Addr(), map[string]string{mirror.SettingTopicsInclude: "orders|payments|marker.*"})
	itest.WaitFor(t, "topics created", func() bool { return hasTopic(b, "orders") && hasTopic(b, "payments") })
	itest.WaitMirrored(t, a, b, "orders", 1)
	resp, err := itest.KadmClient(t, a.Addr()).DeleteTopics(context.Background(), "orders")
	itest.Must(t, "delete", err)
	itest.Must(t, "delete", resp.Error())
	itest.WaitFor(t, "orders FAILED", func() bool { return partitionStatus(t, m, "orders").State == mirror.Failed })

	check := func(when string) {
		t.Helper()
		p := partitionStatus(t, m, "orders")
		if p.State != mirror.Failed || p.Retriable || p.BarrierOffset != -1 ||
			!strings.Contains(p.Reason, "source topic deleted") || !strings.Contains(p.Reason, "mirror stop") {
			t.Fatalf("orders %s: %+v, want FAILED, not retried, no barrier, the reason naming the deletion and `mirror stop`", when, p)
		}
		if got := itest.Barriers(t, b, "orders", 0); len(got) != 0 {
			t.Fatalf("orders %s: barriers %v, want none", when, got)
		}
		err := itest.NewClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner())).
			ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("x")}).FirstErr()
		if !errors.Is(err, kerr.PolicyViolation) {
			t.Fatalf("produce to orders %s: %v, want POLICY_VIOLATION (read-only)", when, err)
		}
		itest.AssertValues(t, b, "orders", 0, itest.Values("a", 5))
		if q := partitionStatus(t, m, "payments"); q.State != mirror.Mirroring {
			t.Fatalf("payments %s: %+v, want still MIRRORING", when, q)
		}
	}
	check("after the deletion")
	warned := logs.FilterMessageSnippet("source topic deleted").FilterField(zap.String("topic", "orders")).All()
	if len(warned) != 1 || warned[0].Level != zapcore.WarnLevel || !strings.Contains(warned[0].Message, "FAILED") {
		t.Fatalf("log lines about the deletion: %v, want one WARN saying FAILED", warned)
	}
	// More refreshes change nothing.
	itest.ProduceTo(t, a.Addr(), "payments", "p", 2)
	waitRefreshes(t, a, b, "marker-1")
	waitRefreshes(t, a, b, "marker-2")
	check("two refreshes later")

	// The operator fails it over.
	itest.Must(t, "stop", m.Stop("from-a", []string{"orders"}))
	p := partitionStatus(t, m, "orders")
	if p.State != mirror.Stopped || p.BarrierOffset != 5 || !strings.Contains(p.Reason, "source topic deleted") {
		t.Fatalf("orders after mirror stop: %+v", p)
	}
	if got := itest.Barriers(t, b, "orders", 0); fmt.Sprint(got) != "[5]" {
		t.Fatalf("barriers %v, want one at 5", got)
	}
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "orders", 0, "b", 3)
	itest.AssertValues(t, b, "orders", 0, itest.Concat(itest.Values("a", 5), itest.Values("b", 3)))
}
