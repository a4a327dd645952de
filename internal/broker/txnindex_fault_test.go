package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// TestFailedTxnIndexWriteKeepsAbortFiltered: a transaction's three
// records are acknowledged and fsynced (a flush, as the background
// flusher's) and the transaction aborted while every write of a .txnindex fails (errorfs).
// The ABORT marker is in the log; the index entry that tells
// read_committed readers to drop the records is not on disk. The
// partition goes offline for writes (KAFKA_STORAGE_ERROR, as Kafka takes
// the log directory offline on an IOException), and a read_committed
// Fetch, still served below the flushed offset, must list the aborted
// transaction beside the records. Without the entry kept in memory the
// Fetch returns the three records with no aborted transaction: a
// read_committed client takes them as committed.
func TestFailedTxnIndexWriteKeepsAbortFiltered(t *testing.T) {
	b, e := newErrorFSBroker(t, t.TempDir())
	b.Serve()
	defer b.Close(context.Background()) // reports the offline log's failure
	if _, err := b.CreateTopic("txi", 1, nil, [16]byte{}, false); err != nil {
		t.Fatal(err)
	}
	tx := newTxnTestClient(t, b.Addr(), kgo.TransactionalID("txi-writer"), kgo.RecordRetries(0))
	ctx := t.Context()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "txi", Value: fmt.Appendf(nil, "aborted-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := b.Partition("txi", 0)
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	e.Inject(errorfs.Rule{Op: errorfs.OpWrite, PathContains: ".txnindex"})
	if err := tx.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for p.Offline() == nil && time.Now().Before(deadline) { // the marker may be written by the coordinator's retry
		time.Sleep(10 * time.Millisecond)
	}
	if p.Offline() == nil {
		t.Fatalf("partition online after a failed .txnindex write (injected: %q)", e.Injected())
	}
	e.Clear()

	cl := newTxnTestClient(t, b.Addr())
	if mp := metadataPartition(t, cl, "txi"); mp.ErrorCode != kerr.KafkaStorageError.Code {
		t.Errorf("Metadata after the failed index write: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(mp.ErrorCode))
	}
	req := kmsg.NewPtrFetchRequest()
	req.IsolationLevel, req.MaxBytes = 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	topic, _ := b.Topic("txi")
	rt.Topic, rt.TopicID = "txi", topic.ID // by name before v13, by id from it
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	fp := resp.Topics[0].Partitions[0]
	var data []int64 // the offsets of the data records served
	var pid int64 = -1
	it := batch.NewIter(fp.RecordBatches)
	for _, h, ok := it.Next(); ok; _, h, ok = it.Next() {
		if !h.IsControl() {
			for o := h.BaseOffset; o <= h.LastOffset(); o++ {
				data = append(data, o)
			}
			pid = h.ProducerID
		}
	}
	t.Logf("read_committed fetch: error %v, HW %d, LSO %d, data offsets %v, aborted %+v",
		kerr.ErrorForCode(fp.ErrorCode), fp.HighWatermark, fp.LastStableOffset, data, fp.AbortedTransactions)
	if len(data) == 0 {
		t.Fatal("the fetch served none of the transaction's records: the test shows nothing")
	}
	for _, a := range fp.AbortedTransactions {
		if a.ProducerID == pid && a.FirstOffset <= data[0] {
			return
		}
	}
	t.Fatalf("records %v of producer %d served to read_committed without their aborted transaction %+v: a client takes them as committed",
		data, pid, fp.AbortedTransactions)
}
