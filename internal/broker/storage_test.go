package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// metadataPartition asks for topic's partition 0 over Metadata.
func metadataPartition(t *testing.T, cl *kgo.Client, topic string) kmsg.MetadataResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = &topic
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// A disk that fills up: the produce that meets ENOSPC fails, the partition
// stays online (Metadata, /metrics), and once space is freed the same
// partition takes records again without a restart, every acknowledged
// record readable. Then a failed fsync: the partition goes offline for
// writes (not retryable: the page cache can no longer be trusted),
// Metadata answers KAFKA_STORAGE_ERROR with this node offline, /metrics
// counts it, and produce keeps failing after the fault is gone.
func TestStorageFailureRetryableOrOffline(t *testing.T) {
	b, e := newErrorFSBroker(t, t.TempDir())
	b.Serve()
	defer b.Close(context.Background()) // reports the offline log's failure
	if _, err := b.CreateTopic("disk", 1, map[string]string{"flush.messages": "1"}, [16]byte{}, false); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordRetries(0), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(v string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "disk", Value: []byte(v)}).FirstErr()
	}
	acked := 0
	for i := range 5 {
		if err := produce("before-" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		acked++
	}
	e.SetSpace(10) // the disk is full
	if err := produce("no-space"); err == nil {
		t.Fatal("produce on a full disk succeeded")
	}
	if mp := metadataPartition(t, cl, "disk"); mp.ErrorCode != 0 {
		t.Fatalf("after ENOSPC: partition %v", kerr.ErrorForCode(mp.ErrorCode))
	}
	p, _ := b.Partition("disk", 0)
	if err := p.Offline(); err != nil {
		t.Fatalf("offline after ENOSPC: %v", err)
	}
	e.SetSpace(-1) // space freed
	for i := range 5 {
		if err := produce("after-" + strconv.Itoa(i)); err != nil {
			t.Fatalf("produce after space was freed: %v", err)
		}
		acked++
	}
	if got := p.Offsets().LogEnd; got != int64(acked) {
		t.Fatalf("log end %d, want %d acknowledged", got, acked)
	}
	if n := readCount(t, b.Addr(), "disk", acked); n != acked {
		t.Fatalf("read %d records, want %d", n, acked)
	}

	e.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: "disk-0"})
	if err := produce("fsync-fails"); err == nil {
		t.Fatal("produce with a failing fsync succeeded")
	}
	e.Clear()
	if err := p.Offline(); err == nil {
		t.Fatal("online after a failed fsync")
	}
	mp := metadataPartition(t, cl, "disk")
	if mp.ErrorCode != kerr.KafkaStorageError.Code || len(mp.OfflineReplicas) != 1 || mp.OfflineReplicas[0] != b.nodeID {
		t.Fatalf("Metadata of an offline partition: %v offline %v", kerr.ErrorForCode(mp.ErrorCode), mp.OfflineReplicas)
	}
	if got := testutil.CollectAndCount(&storageCollector{b: b}, "minibroker_partition_offline"); got != 1 {
		t.Errorf("%d minibroker_partition_offline series, want 1", got)
	}
	if err := produce("still-offline"); err == nil {
		t.Fatal("produce to an offline partition succeeded")
	}
}

// readCount consumes topic from the start and counts its records (until
// want, or 10 s).
func readCount(t *testing.T, addr, topic string, want int) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := 0
	for ctx.Err() == nil && n < want {
		fs := cl.PollFetches(ctx)
		n += fs.NumRecords()
	}
	return n
}
