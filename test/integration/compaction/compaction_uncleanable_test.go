package compaction

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactionUncleanablePartition: a partition whose cleaning pass
// fails (here a gzip batch that inflates past the cleaner's 64 MiB bound,
// which produce accepts) is marked uncleanable and skipped until restart,
// as Kafka's markPartitionUncleanable does, so another compacted topic is
// still cleaned and the failing pass is not rerun every backoff. Seen
// failing without the mark (a temporary edit of cleanerManager.clean):
// the errors counter climbed with every log.cleaner.backoff.ms.
func TestCompactionUncleanablePartition(t *testing.T) {
	t.Parallel()
	r := itest.StartBroker(t, itest.BrokerOptions{Config: func(c *config.Config) { c.Kafka["log.cleaner.backoff.ms"] = "50" }})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := itest.KadmClient(t, r.Addr())
	sp := func(s string) *string { return &s }
	for _, topic := range []string{"unclean-bad", "unclean-good"} {
		res, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
			"cleanup.policy": sp("compact"), "segment.bytes": sp("4096"), "min.cleanable.dirty.ratio": sp("0.01"),
		}, topic)
		if err != nil || res.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, res.Err)
		}
	}
	// 65 MiB of zeros gzip to about 64 KiB on the wire.
	big := itest.NewClient(t, r.Addr(), kgo.ProducerBatchCompression(kgo.GzipCompression()),
		kgo.ProducerBatchMaxBytes(96<<20), kgo.MaxBufferedBytes(256<<20))
	if err := big.ProduceSync(ctx, &kgo.Record{Topic: "unclean-bad", Key: []byte("huge"),
		Value: make([]byte, 65<<20)}).FirstErr(); err != nil {
		t.Fatalf("produce the oversized batch: %v", err)
	}
	prod := itest.NewClient(t, r.Addr())
	for i := range 40 {
		for _, topic := range []string{"unclean-bad", "unclean-good"} {
			rec := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i%4)), Value: bytes.Repeat([]byte{'v'}, 500)}
			if err := prod.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	reg := r.B.Registry()
	deadline := time.Now().Add(30 * time.Second)
	for itest.MetricSum(t, reg, "minibroker_log_cleaner_uncleanable_partitions") != 1 ||
		itest.MetricSum(t, reg, "minibroker_log_cleaner_passes_total") < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: uncleanable %v, passes %v, errors %v (want 1, >= 1)",
				itest.MetricSum(t, reg, "minibroker_log_cleaner_uncleanable_partitions"),
				itest.MetricSum(t, reg, "minibroker_log_cleaner_passes_total"),
				itest.MetricSum(t, reg, "minibroker_log_cleaner_errors_total"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	errs := itest.MetricSum(t, reg, "minibroker_log_cleaner_errors_total")
	time.Sleep(20 * 50 * time.Millisecond) // 20 backoffs
	if now := itest.MetricSum(t, reg, "minibroker_log_cleaner_errors_total"); now != errs || errs != 1 {
		t.Fatalf("failed passes: %v, then %v after 20 backoffs; want 1 and no retry", errs, now)
	}
}
