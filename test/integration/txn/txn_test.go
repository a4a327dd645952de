package txn

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
	"github.com/minibroker/minibroker/minibrokertest"
)

// lastStable is the partition's last stable offset (ListOffsets with
// read_committed).
func lastStable(t *testing.T, addr, topic string) int64 {
	t.Helper()
	offs, err := kadm.NewClient(itest.NewClient(t, addr)).ListCommittedOffsets(itest.TxnCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := offs.Lookup(topic, 0)
	return o.Offset
}

func isFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
}

// TestTxnKgo: commits are visible to read_committed and aborts are not;
// an open transaction holds read_committed readers at its first offset
// while read_uncommitted readers see it; a second producer with the same
// transactional id fences the first — in a fresh cluster, after a clean
// restart, and after a crash.
func TestTxnKgo(t *testing.T) {
	const topic = "tx"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 1))
	var committed, all []string
	round := func(stage string) {
		t.Helper()
		p1 := itest.TxnClient(t, c.Addr(), "tid", topic)
		v := func(s string) string { return stage + "-" + s }
		itest.ProduceTxn(t, p1, true, v("c1"), v("c2"))
		itest.ProduceTxn(t, p1, false, v("a1"))
		committed = append(committed, v("c1"), v("c2"))
		all = append(all, v("c1"), v("c2"), v("a1"))

		// An open transaction: read_uncommitted sees it, read_committed
		// stops at its first offset.
		if err := p1.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p1.ProduceSync(itest.TxnCtx(t), &kgo.Record{Value: []byte(v("open"))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		all = append(all, v("open"))
		if got := itest.ReadTxnValues(t, c.Addr(), topic, false); !slices.Equal(got, all) {
			t.Fatalf("%s: read_uncommitted got %q, want %q", stage, got, all)
		}
		openAt := int64(-1)
		hw, _ := kadm.NewClient(itest.NewClient(t, c.Addr())).ListEndOffsets(itest.TxnCtx(t), topic)
		if o, _ := hw.Lookup(topic, 0); o.Offset > 0 {
			openAt = o.Offset - 1
		}
		if lso := lastStable(t, c.Addr(), topic); lso != openAt {
			t.Fatalf("%s: last stable offset %d, want %d (the open transaction's first offset)", stage, lso, openAt)
		}
		if got := itest.ReadTxnValues(t, c.Addr(), topic, true); !slices.Equal(got, committed) {
			t.Fatalf("%s: read_committed with an open transaction got %q, want %q", stage, got, committed)
		}

		// A second session with the same id fences the first: the open
		// transaction is aborted, the first producer gets a fencing error.
		p2 := itest.TxnClient(t, c.Addr(), "tid", topic)
		itest.ProduceTxn(t, p2, true, v("p2"))
		committed = append(committed, v("p2"))
		all = append(all, v("p2"))
		err := p1.ProduceSync(itest.TxnCtx(t), &kgo.Record{Value: []byte(v("zombie"))}).FirstErr()
		if err == nil {
			err = p1.EndTransaction(itest.TxnCtx(t), kgo.TryCommit)
		}
		if !isFenced(err) {
			t.Fatalf("%s: fenced producer got %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", stage, err)
		}
		p1.Close()
		p2.Close()
		if got := itest.ReadTxnValues(t, c.Addr(), topic, true); !slices.Equal(got, committed) {
			t.Fatalf("%s: read_committed got %q, want %q", stage, got, committed)
		}
		if lso, hw := lastStable(t, c.Addr(), topic), hwOf(t, c.Addr(), topic); lso != hw {
			t.Fatalf("%s: last stable offset %d != high watermark %d with no open transaction", stage, lso, hw)
		}
	}
	round("fresh")
	c.Restart()
	if got := itest.ReadTxnValues(t, c.Addr(), topic, true); !slices.Equal(got, committed) {
		t.Fatalf("after restart: read_committed got %q, want %q", got, committed)
	}
	round("restarted")
	c.Kill()
	c.Revive()
	if got := itest.ReadTxnValues(t, c.Addr(), topic, true); !slices.Equal(got, committed) {
		t.Fatalf("after crash: read_committed got %q, want %q", got, committed)
	}
	round("crashed")
}

func hwOf(t *testing.T, addr, topic string) int64 {
	t.Helper()
	offs, err := kadm.NewClient(itest.NewClient(t, addr)).ListEndOffsets(itest.TxnCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := offs.Lookup(topic, 0)
	return o.Offset
}

// TestTxnOpenAcrossCrash: a transaction open when the broker crashes still
// holds read_committed readers at its first offset after the restart, and
// the producer commits it afterwards.
func TestTxnOpenAcrossCrash(t *testing.T) {
	const topic = "tx"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 1))
	p := itest.TxnClient(t, c.Addr(), "t-open", topic)
	itest.ProduceTxn(t, p, true, "before")
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(itest.TxnCtx(t), &kgo.Record{Value: []byte("inflight")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, restart := range []func(){func() { c.Kill(); c.Revive() }, c.Restart} {
		restart()
		if lso := lastStable(t, c.Addr(), topic); lso != 2 {
			t.Fatalf("last stable offset after restart %d, want 2 (before=0, marker=1, inflight=2)", lso)
		}
		if got := itest.ReadTxnValues(t, c.Addr(), topic, true); !slices.Equal(got, []string{"before"}) {
			t.Fatalf("read_committed after restart: %q", got)
		}
	}
	if err := p.EndTransaction(itest.TxnCtx(t), kgo.TryCommit); err != nil {
		t.Fatalf("commit after restart: %v", err)
	}
	if got := itest.ReadTxnValues(t, c.Addr(), topic, true); !slices.Equal(got, []string{"before", "inflight"}) {
		t.Fatalf("read_committed after the commit: %q", got)
	}
}

// TestTxnTimeoutAbort: a transaction past transaction.timeout.ms is
// aborted by the coordinator, its records never visible, and its producer
// fenced.
func TestTxnTimeoutAbort(t *testing.T) {
	const topic = "tx"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 1))
	p := itest.TxnClient(t, c.Addr(), "t-slow", topic, kgo.TransactionTimeout(300*time.Millisecond))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(itest.TxnCtx(t), &kgo.Record{Value: []byte("slow")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	itest.WaitFor(t, "the timed-out transaction's abort", func() bool { return lastStable(t, c.Addr(), topic) == hwOf(t, c.Addr(), topic) })
	if got := itest.ReadTxnValues(t, c.Addr(), topic, true); len(got) != 0 {
		t.Fatalf("read_committed sees %q from a timed-out transaction", got)
	}
	if err := p.EndTransaction(itest.TxnCtx(t), kgo.TryCommit); err == nil {
		t.Fatal("commit of a timed-out transaction succeeded")
	}
	adm := kadm.NewClient(itest.NewClient(t, c.Addr()))
	described, err := adm.DescribeTransactions(itest.TxnCtx(t), "t-slow")
	if err != nil {
		t.Fatal(err)
	}
	d, ok := described["t-slow"]
	if !ok || d.State != "CompleteAbort" || d.ProducerEpoch != 1 {
		t.Fatalf("described: %+v", described)
	}
}

// TestTxnAdminAPIs: DescribeTransactions, ListTransactions (state and
// producer-id filters) and DescribeProducers through kadm.
func TestTxnAdminAPIs(t *testing.T) {
	const topic = "tx"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 1))
	p := itest.TxnClient(t, c.Addr(), "t-admin", topic)
	itest.ProduceTxn(t, p, true, "x")
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(itest.TxnCtx(t), &kgo.Record{Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	q := itest.TxnClient(t, c.Addr(), "t-other", topic)
	itest.ProduceTxn(t, q, true, "z")
	adm := kadm.NewClient(itest.NewClient(t, c.Addr()))
	ctx := itest.TxnCtx(t)

	described, err := adm.DescribeTransactions(ctx, "t-admin", "t-missing")
	if err != nil {
		t.Fatal(err)
	}
	d := described["t-admin"]
	if d.State != "Ongoing" || len(d.Topics[topic]) != 1 || d.StartTimestamp <= 0 {
		t.Fatalf("t-admin: %+v", d)
	}
	if m := described["t-missing"]; !errors.Is(m.Err, kerr.TransactionalIDNotFound) {
		t.Fatalf("t-missing: %+v", m)
	}

	listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil {
		t.Fatal(err)
	}
	if ids := listed.TransactionalIDs(); !slices.Equal(ids, []string{"t-admin"}) {
		t.Fatalf("ongoing: %v", ids)
	}
	listed, err = adm.ListTransactions(ctx, []int64{d.ProducerID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids := listed.TransactionalIDs(); !slices.Equal(ids, []string{"t-admin"}) {
		t.Fatalf("by producer id %d: %v", d.ProducerID, ids)
	}
	listed, err = adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := listed.TransactionalIDs()
	sort.Strings(ids)
	if !slices.Equal(ids, []string{"t-admin", "t-other"}) {
		t.Fatalf("all: %v", ids)
	}

	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	producers.EachProducer(func(dp kadm.DescribedProducer) {
		if dp.CurrentTxnStartOffset >= 0 {
			open = append(open, fmt.Sprintf("pid=%d start=%d", dp.ProducerID, dp.CurrentTxnStartOffset))
		}
	})
	if want := fmt.Sprintf("pid=%d start=2", d.ProducerID); !slices.Equal(open, []string{want}) {
		t.Fatalf("producers with an open transaction: %v, want [%s]", open, want)
	}
}

// TestTxnExactlyOncePipelineAcrossCrash: a kgo GroupTransactSession
// consumes topic A and produces each record to topic B, committing the
// consumed offsets in the same transaction; the broker is killed (as
// kill -9) mid-stream and revived. B, read with read_committed, holds
// every input exactly once.
func TestTxnExactlyOncePipelineAcrossCrash(t *testing.T) {
	const in, out, n = "eos-in", "eos-out", 3000
	c := minibrokertest.Start(t, minibrokertest.Topic(in, 3), minibrokertest.Topic(out, 2))
	// Small batches, so the pipeline's transactions are small and many.
	prod := itest.NewClient(t, c.Addr(), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := 0; i < n; i += 30 {
		var recs []*kgo.Record
		for j := i; j < i+30 && j < n; j++ {
			recs = append(recs, &kgo.Record{Topic: in, Value: []byte(fmt.Sprintf("v-%d", j))})
		}
		if err := prod.ProduceSync(itest.TxnCtx(t), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	newSession := func() *kgo.GroupTransactSession {
		sess, err := kgo.NewGroupTransactSession(
			kgo.SeedBrokers(c.Addr()), kgo.TransactionalID("eos-pipeline"), kgo.TransactionTimeout(20*time.Second),
			kgo.ConsumerGroup("eos-group"), kgo.ConsumeTopics(in), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.DefaultProduceTopic(out), kgo.FetchMaxPartitionBytes(2000), kgo.FetchMaxWait(100*time.Millisecond),
			kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(200*time.Millisecond), kgo.RebalanceTimeout(5*time.Second),
			kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		)
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var batches, aborted, sessions atomic.Int64
	go func() {
		defer close(done)
		sess := newSession()
		sessions.Add(1)
		defer func() { sess.Close() }()
		for ctx.Err() == nil {
			fs := sess.PollFetches(ctx)
			if fs.IsClientClosed() || ctx.Err() != nil {
				return
			}
			if err := sess.Begin(); err != nil {
				t.Errorf("begin: %v", err)
				return
			}
			e := kgo.AbortingFirstErrPromise(sess.Client())
			fs.EachRecord(func(r *kgo.Record) {
				sess.Produce(ctx, &kgo.Record{Topic: out, Key: r.Key, Value: r.Value}, e.Promise())
			})
			time.Sleep(5 * time.Millisecond) // keep the stream going while the broker dies
			committed, err := sess.End(ctx, kgo.TransactionEndTry(e.Err() == nil))
			batches.Add(1)
			if !committed || err != nil {
				aborted.Add(1)
			}
			if err != nil && ctx.Err() == nil {
				// kgo: no End error is retryable. What an application
				// does: a new session with the same transactional id,
				// which fences the old one and aborts its transaction.
				t.Logf("end: %v; starting a new session", err)
				sess.Close()
				sess = newSession()
				sessions.Add(1)
			}
		}
	}()
	defer func() {
		cancel()
		<-done
	}()

	countOut := func() int {
		offs, err := kadm.NewClient(itest.NewClient(t, c.Addr())).ListCommittedOffsets(itest.TxnCtx(t), out)
		if err != nil {
			return 0
		}
		total := 0
		offs.Each(func(o kadm.ListedOffset) { total += int(o.Offset) })
		return total
	}
	itest.WaitFor(t, "a third of the pipeline", func() bool { return countOut() > n/3 })
	c.Kill()
	time.Sleep(300 * time.Millisecond)
	c.Revive()

	seen := map[string]int{}
	reader := itest.NewClient(t, c.Addr(), kgo.ConsumeTopics(out), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
	deadline := time.Now().Add(60 * time.Second)
	for len(seen) < n && time.Now().Before(deadline) {
		poll, pcancel := context.WithTimeout(context.Background(), time.Second)
		fs := reader.PollFetches(poll)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	// Let the pipeline run on briefly: nothing more may appear.
	time.Sleep(500 * time.Millisecond)
	poll, pcancel := context.WithTimeout(context.Background(), time.Second)
	reader.PollFetches(poll).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	pcancel()
	dups := 0
	for v, k := range seen {
		if k > 1 {
			dups++
			if dups < 5 {
				t.Errorf("%s appears %d times in %s", v, k, out)
			}
		}
	}
	if len(seen) != n || dups != 0 {
		t.Fatalf("%s holds %d distinct of %d inputs, %d duplicated (%d transactions, %d aborted)", out, len(seen), n, dups, batches.Load(), aborted.Load())
	}
	t.Logf("%d transactions, %d aborted, %d sessions", batches.Load(), aborted.Load(), sessions.Load())
}

// TestTxnProducerIDsNeverRepeatAcrossRestarts: 100 broker restarts, every
// other one a crash (Kill), with idempotent and transactional
// InitProducerId calls between them: no producer id is handed out twice.
func TestTxnProducerIDsNeverRepeatAcrossRestarts(t *testing.T) {
	c := minibrokertest.Start(t)
	seen := map[int64]string{}
	for i := 0; i < 100; i++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 3; j++ {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionTimeoutMillis = 10_000
			who := fmt.Sprintf("restart %d idempotent %d", i, j)
			if j == 2 {
				id := fmt.Sprintf("t-%d", i)
				req.TransactionalID = &id
				who = fmt.Sprintf("restart %d transactional %s", i, id)
			}
			resp, err := req.RequestWith(itest.TxnCtx(t), cl)
			if err != nil || resp.ErrorCode != 0 {
				t.Fatalf("%s: %v (code %d)", who, err, resp.ErrorCode)
			}
			if prev, dup := seen[resp.ProducerID]; dup {
				t.Fatalf("producer id %d handed out twice: %s and %s", resp.ProducerID, prev, who)
			}
			seen[resp.ProducerID] = who
		}
		cl.Close()
		if i%2 == 0 {
			c.Kill()
			c.Revive()
		} else {
			c.Restart()
		}
	}
}

// txnBatch encodes one uncompressed transactional v2 batch of one record.
func txnBatch(value []byte, pid int64, epoch int16, seq int32) []byte {
	rec := kmsg.Record{Value: value}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	body := rec.AppendTo(nil)
	now := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{Magic: 2, Attributes: 0x10, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: 1, Records: body}
	rb.Length = int32(49 + len(body))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], itest.Crc32c(raw[21:]))
	return raw
}

// TestTxnProduceVerification: a transactional batch is accepted only for a
// partition in the producer's open transaction (Kafka 3.6+ verification),
// which also keeps a late batch from opening a transaction no coordinator
// will ever end (a hanging transaction). The client speaks transaction
// version 0/1 (Produce v11, AddPartitionsToTxn v3, EndTxn v4): a partition
// not added is TRANSACTION_ABORTABLE (Produce v11+; INVALID_TXN_STATE
// before, checked at v10).
func TestTxnProduceVerification(t *testing.T) {
	const topic = "tv"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 2))
	tv1 := kversion.Stable()
	tv1.SetMaxKeyVersion(0, 11)
	tv1.SetMaxKeyVersion(24, 3)
	tv1.SetMaxKeyVersion(26, 4)
	cl := itest.NewClient(t, c.Addr(), kgo.MaxVersions(tv1))
	v10 := kversion.Stable()
	v10.SetMaxKeyVersion(0, 10)
	cl10 := itest.NewClient(t, c.Addr(), kgo.MaxVersions(v10))
	ctx := itest.TxnCtx(t)
	txnID := "verify"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &txnID, 30_000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("init: %v %d", err, ir.ErrorCode)
	}
	pid, epoch := ir.ProducerID, ir.ProducerEpoch
	produceWith := func(cl *kgo.Client, p int32, seq int32, e int16, txn *string) int16 {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis, req.TransactionID = -1, 5000, txn
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, txnBatch([]byte("x"), pid, e, seq)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	produce := func(p int32, seq int32, e int16, txn *string) int16 {
		t.Helper()
		return produceWith(cl, p, seq, e, txn)
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = txnID, pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = topic, []int32{0}
	add.Topics = append(add.Topics, at)
	ar, err := add.RequestWith(ctx, cl)
	if err != nil || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("add partitions: %v %+v", err, ar)
	}

	if code := produce(1, 0, epoch, &txnID); code != kerr.TransactionAbortable.Code {
		t.Fatalf("partition not in the transaction: code %d, want TRANSACTION_ABORTABLE", code)
	}
	if code := produceWith(cl10, 1, 0, epoch, &txnID); code != kerr.InvalidTxnState.Code {
		t.Fatalf("partition not in the transaction, Produce v10: code %d, want INVALID_TXN_STATE", code)
	}
	if code := produce(0, 0, epoch, nil); code != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional batch without a transactional id: code %d", code)
	}
	if code := produce(0, 0, epoch, &txnID); code != 0 {
		t.Fatalf("partition in the transaction: code %d", code)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = txnID, pid, epoch, true
	if er, err := end.RequestWith(ctx, cl); err != nil || er.ErrorCode != 0 {
		t.Fatalf("end: %v %+v", err, er)
	}
	// A late batch after the commit would open a transaction nobody ends.
	if code := produce(0, 1, epoch, &txnID); code != kerr.TransactionAbortable.Code {
		t.Fatalf("batch after the commit: code %d, want TRANSACTION_ABORTABLE", code)
	}
	if lso, hw := lastStable(t, c.Addr(), topic), hwOf(t, c.Addr(), topic); lso != hw || hw != 2 {
		t.Fatalf("last stable %d, high watermark %d; want 2 and 2 (record, marker)", lso, hw)
	}
	// A fenced epoch.
	ir, err = init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 || ir.ProducerEpoch != epoch+1 {
		t.Fatalf("re-init: %v %+v", err, ir)
	}
	if code := produce(0, 0, epoch, &txnID); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("fenced epoch: code %d, want INVALID_PRODUCER_EPOCH", code)
	}
}

// TestTxnCommitCompletesAfterCrashBeforeMarkers: the commit is decided
// (durable in the transaction log) but the marker of one partition cannot
// be written — its disk fails — and the broker crashes. On restart the
// coordinator finishes the commit: read_committed readers of that
// partition get past the transaction and see its records.
func TestTxnCommitCompletesAfterCrashBeforeMarkers(t *testing.T) {
	const topic = "crashy"
	efs := errorfs.Wrap(vfs.Default)
	r := itest.StartBroker(t, itest.BrokerOptions{FS: efs})
	b := r.B
	if _, err := b.CreateTopic(topic, 2, nil, [16]byte{}, false); err != nil {
		t.Fatal(err)
	}
	p := itest.TxnClient(t, b.Addr(), "crashy-txn", topic, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for part := int32(0); part < 2; part++ {
		r := &kgo.Record{Partition: part, Value: []byte(fmt.Sprintf("v%d", part))}
		if err := p.ProduceSync(itest.TxnCtx(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	efs.Inject(errorfs.Rule{Op: errorfs.OpWrite, PathContains: topic + "-1"})
	if err := p.EndTransaction(itest.TxnCtx(t), kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v (the decision is durable: Kafka answers success)", err)
	}
	p.Close()
	stable := func(addr string) (lso, hw int64) {
		adm := kadm.NewClient(itest.NewClient(t, addr))
		l, err1 := adm.ListCommittedOffsets(itest.TxnCtx(t), topic)
		h, err2 := adm.ListEndOffsets(itest.TxnCtx(t), topic)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		lo, _ := l.Lookup(topic, 1)
		ho, _ := h.Lookup(topic, 1)
		return lo.Offset, ho.Offset
	}
	// The failed marker write took partition 1 offline: Metadata answers
	// it KAFKA_STORAGE_ERROR, as Kafka answers for a partition whose log
	// dir failed, so ListOffsets cannot be sent for it.
	part1, _ := b.Partition(topic, 1)
	if part1.Offline() == nil {
		t.Fatal("partition 1 is online after its marker's write failed")
	}
	if off := part1.Offsets(); off.LastStable != 0 {
		t.Fatalf("partition 1's last stable offset %d before the crash, want 0 (its marker failed)", off.LastStable)
	}
	if _, err := kadm.NewClient(itest.NewClient(t, b.Addr())).ListCommittedOffsets(itest.TxnCtx(t), topic); err == nil || !strings.Contains(err.Error(), "KAFKA_STORAGE_ERROR") {
		t.Fatalf("ListOffsets of the offline partition: %v, want KAFKA_STORAGE_ERROR", err)
	}
	r.Opts.FS = nil // the disk is repaired
	r.CrashAndRestart(mirror.Options{})
	b2 := r.B
	itest.WaitFor(t, "the commit's completion after restart", func() bool { lso, hw := stable(b2.Addr()); return lso == hw && hw > 1 })
	cl := itest.NewClient(t, b2.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var got []string
	for len(got) < 2 {
		fs := cl.PollFetches(itest.TxnCtx(t))
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	sort.Strings(got)
	if !slices.Equal(got, []string{"v0", "v1"}) {
		t.Fatalf("read_committed after restart: %q", got)
	}
	d, err := kadm.NewClient(itest.NewClient(t, b2.Addr())).DescribeTransactions(itest.TxnCtx(t), "crashy-txn")
	if err != nil || d["crashy-txn"].State != "CompleteCommit" {
		t.Fatalf("described: %+v %v", d, err)
	}
}

// TestTxnAdminAbortWithWriteTxnMarkers: an operator aborts an open
// transaction found with DescribeProducers (KIP-664's
// kafka-transactions.sh abort): the last stable offset moves past it and
// its records stay invisible to read_committed, even if the producer later
// commits. A stale coordinator epoch is fenced.
func TestTxnAdminAbortWithWriteTxnMarkers(t *testing.T) {
	const topic = "tx"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 1))
	p := itest.TxnClient(t, c.Addr(), "t-hanging", topic)
	itest.ProduceTxn(t, p, true, "committed") // offsets 0 and 1 (marker): coordinator epoch recorded
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(itest.TxnCtx(t), &kgo.Record{Value: []byte("hanging")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(itest.NewClient(t, c.Addr()))
	producers, err := adm.DescribeProducers(itest.TxnCtx(t), kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var hanging kadm.DescribedProducer
	producers.EachProducer(func(dp kadm.DescribedProducer) {
		if dp.CurrentTxnStartOffset == 2 {
			hanging = dp
		}
	})
	if hanging.CurrentTxnStartOffset != 2 {
		t.Fatalf("no producer with a transaction open at offset 2: %+v", producers)
	}
	write := func(coordEpoch int32) error {
		resp, err := adm.WriteTxnMarkers(itest.TxnCtx(t), kadm.TxnMarkers{ProducerID: hanging.ProducerID, ProducerEpoch: hanging.ProducerEpoch,
			CoordinatorEpoch: coordEpoch, Topics: kadm.TopicsSet{topic: {0: {}}}})
		if err != nil {
			return err
		}
		var perr error
		resp.EachPartition(func(r kadm.TxnMarkersPartitionResponse) { perr = errors.Join(perr, r.Err) })
		return perr
	}
	if err := write(hanging.CoordinatorEpoch - 1); !errors.Is(err, kerr.TransactionCoordinatorFenced) {
		t.Fatalf("stale coordinator epoch: %v", err)
	}
	if err := write(hanging.CoordinatorEpoch); err != nil {
		t.Fatal(err)
	}
	if lso, hw := lastStable(t, c.Addr(), topic), hwOf(t, c.Addr(), topic); lso != hw {
		t.Fatalf("last stable %d, high watermark %d after the abort", lso, hw)
	}
	p.EndTransaction(itest.TxnCtx(t), kgo.TryCommit) // too late: the partition's transaction is over
	if got := itest.ReadTxnValues(t, c.Addr(), topic, true); !slices.Equal(got, []string{"committed"}) {
		t.Fatalf("read_committed: %q", got)
	}
}

// TestTxnIDExpirationAndMetrics: an idle transactional id expires after
// transactional.id.expiration.ms (and comes back with a new producer id);
// /metrics shows transactions by state, timeouts and producer ids issued.
func TestTxnIDExpirationAndMetrics(t *testing.T) {
	const topic = "tx"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 1), minibrokertest.HTTP(),
		minibrokertest.Set("transactional.id.expiration.ms", "1000"))
	p := itest.TxnClient(t, c.Addr(), "t-idle", topic)
	itest.ProduceTxn(t, p, true, "x")
	p.Close()
	adm := kadm.NewClient(itest.NewClient(t, c.Addr()))
	d, err := adm.DescribeTransactions(itest.TxnCtx(t), "t-idle")
	if err != nil || d["t-idle"].State != "CompleteCommit" {
		t.Fatalf("described: %+v %v", d, err)
	}
	firstPID := d["t-idle"].ProducerID

	resp, err := http.Get("http://" + c.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`minibroker_transactions{state="CompleteCommit"} 1`, "minibroker_producer_ids_issued_total 1",
		"minibroker_transactions_timed_out_total 0", `minibroker_transactions_completed_total{result="commit"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	itest.WaitFor(t, "t-idle to expire", func() bool {
		d, err := adm.DescribeTransactions(itest.TxnCtx(t), "t-idle")
		return err == nil && errors.Is(d["t-idle"].Err, kerr.TransactionalIDNotFound)
	})
	p2 := itest.TxnClient(t, c.Addr(), "t-idle", topic)
	itest.ProduceTxn(t, p2, true, "y")
	d, err = adm.DescribeTransactions(itest.TxnCtx(t), "t-idle")
	if err != nil || d["t-idle"].ProducerID == firstPID {
		t.Fatalf("after expiry: %+v %v (want a new producer id, not %d)", d, err, firstPID)
	}
}
