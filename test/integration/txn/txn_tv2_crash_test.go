package txn

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBinaryKill9DuringTV2Commit runs the built binary with a kgo
// producer on transactions v2 (transaction.version 2: Produce v12 adds the
// partitions, EndTxn v5 bumps the epoch), commits and aborts transactions
// of records spread over three partitions, and kills the broker with
// SIGKILL while a commit is in flight. After a restart on the same data:
// every transaction whose commit was acknowledged is visible to
// read_committed, whole and once; no record of an acknowledged abort is;
// the transaction in flight at the kill is all or nothing; the last
// stable offset reaches the high watermark of every partition (nothing
// hangs); and the same transactional id goes on with a new session.
func TestBinaryKill9DuringTV2Commit(t *testing.T) {
	t.Parallel()
	const topic, perTxn = "tv2crash", 6
	dir := t.TempDir()
	p := itest.StartBinary(t, dir, "--set", "num.partitions=3")
	adm := kadm.NewClient(itest.NewClient(t, p.Addr))
	if _, err := adm.CreateTopic(itest.TxnCtx(t), 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := itest.NewClient(t, p.Addr, kgo.TransactionalID("tv2-crash"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.TransactionTimeout(10*time.Second),
		kgo.RequestRetries(2), kgo.RetryTimeout(3*time.Second))
	committed, aborted := map[int]bool{}, map[int]bool{}
	values := func(i int) []string {
		var out []string
		for j := range perTxn {
			out = append(out, fmt.Sprintf("txn-%04d-%d", i, j))
		}
		return out
	}
	produce := func(i int) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values(i) {
			if err := cl.ProduceSync(itest.TxnCtx(t), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
	}
	const before = 30
	for i := range before {
		produce(i)
		commit := i%3 != 2
		if err := cl.EndTransaction(itest.TxnCtx(t), kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end %d: %v", i, err)
		}
		if commit {
			committed[i] = true
		} else {
			aborted[i] = true
		}
	}
	// The commit in flight at the kill.
	produce(before)
	ended := make(chan error, 1)
	go func() { ended <- cl.EndTransaction(context.Background(), kgo.TryCommit) }()
	p.Stop(t, syscall.SIGKILL)
	endErr := <-ended
	cl.Close()
	if endErr == nil {
		committed[before] = true // acknowledged before the kill: must be there
	}
	t.Logf("%d commits and %d aborts acknowledged; the commit in flight at the kill answered %v", len(committed), len(aborted), endErr)

	p2 := itest.StartBinary(t, dir)
	t.Cleanup(func() { p2.Stop(t, syscall.SIGTERM) })
	adm2 := kadm.NewClient(itest.NewClient(t, p2.Addr))
	var hws [3]int64
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ends, err1 := adm2.ListEndOffsets(itest.TxnCtx(t), topic)
		stable, err2 := adm2.ListCommittedOffsets(itest.TxnCtx(t), topic)
		settled := err1 == nil && err2 == nil
		for part := int32(0); settled && part < 3; part++ {
			e, _ := ends.Lookup(topic, part)
			s, _ := stable.Lookup(topic, part)
			hws[part] = e.Offset
			settled = e.Err == nil && s.Err == nil && s.Offset == e.Offset
		}
		if settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("last stable offsets never reached the high watermarks after the restart: %v %v", ends, stable)
		}
	}
	got := readTxnValuesAll(t, p2.Addr, topic)
	seen := map[string]int{}
	perTxnSeen := map[int]int{}
	for _, v := range got {
		seen[v]++
		var i, j int
		if _, err := fmt.Sscanf(v, "txn-%04d-%d", &i, &j); err != nil {
			t.Fatalf("unexpected record %q", v)
		}
		perTxnSeen[i]++
	}
	for v, n := range seen {
		if n > 1 {
			t.Errorf("%s read %d times", v, n)
		}
	}
	for i := range committed {
		if perTxnSeen[i] != perTxn {
			t.Errorf("acknowledged commit %d: %d of %d records visible", i, perTxnSeen[i], perTxn)
		}
	}
	for i := range aborted {
		if perTxnSeen[i] != 0 {
			t.Errorf("acknowledged abort %d: %d records visible", i, perTxnSeen[i])
		}
	}
	if n := perTxnSeen[before]; n != 0 && n != perTxn {
		t.Errorf("the transaction in flight at the kill: %d of %d records visible (not all or nothing)", n, perTxn)
	}
	t.Logf("after the restart: %d records read_committed (high watermarks %v); in-flight transaction %s",
		len(got), hws, map[bool]string{true: "committed", false: "aborted"}[perTxnSeen[before] == perTxn])

	// The same transactional id goes on.
	cl2 := itest.NewClient(t, p2.Addr, kgo.TransactionalID("tv2-crash"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.TransactionTimeout(10*time.Second))
	if err := cl2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl2.ProduceSync(itest.TxnCtx(t), &kgo.Record{Value: []byte("txn-9999-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl2.EndTransaction(itest.TxnCtx(t), kgo.TryCommit); err != nil {
		t.Fatalf("commit after the restart: %v", err)
	}
	if got := readTxnValuesAll(t, p2.Addr, topic); !strings.Contains(strings.Join(got, ","), "txn-9999-0") {
		t.Fatal("the commit after the restart is not visible")
	}
}

// readTxnValuesAll reads every partition of topic read_committed: until
// each partition reached its last stable offset, or a second passed with
// nothing new (markers and aborted records move the consumer without
// records).
func readTxnValuesAll(t *testing.T, addr, topic string) []string {
	t.Helper()
	ctx := itest.TxnCtx(t)
	stable, err := kadm.NewClient(itest.NewClient(t, addr)).ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	stable.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	cl := itest.NewClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
	defer cl.Close()
	var out []string
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		poll, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(poll)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("read_committed stopped at %v, want %v", next, want)
		}
		if len(fs.Records()) == 0 {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, string(r.Value))
			next[r.Partition] = r.Offset + 1
		})
	}
	return out
}
