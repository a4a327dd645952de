package txn

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/minibrokertest"
)

// txnStateRecord is one record of __transaction_state decoded with
// kmsg's types (Value nil: a tombstone).
type txnStateRecord struct {
	Partition int32
	Key       kmsg.TxnMetadataKey
	Value     *kmsg.TxnMetadataValue
}

// txnStateTopic reads every partition of __transaction_state with a kgo
// consumer and decodes each record with kmsg's TxnMetadataKey and
// TxnMetadataValue, per transactional id in offset order.
func txnStateTopic(t *testing.T, addr string) map[string][]txnStateRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := itest.KadmClient(t, addr).ListEndOffsets(ctx, "__transaction_state")
	if err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	cl := itest.NewClient(t, addr, kgo.ConsumeTopics("__transaction_state"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	out := map[string][]txnStateRecord{}
	for seen := int64(0); seen < want; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of __transaction_state", seen, want)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch __transaction_state-%d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			var k kmsg.TxnMetadataKey
			if err := k.ReadFrom(r.Key); err != nil || k.Version != 0 {
				t.Fatalf("key at %d-%d: version %d, %v", r.Partition, r.Offset, k.Version, err)
			}
			rec := txnStateRecord{Partition: r.Partition, Key: k}
			if r.Value != nil {
				v := new(kmsg.TxnMetadataValue)
				if err := v.ReadFrom(r.Value); err != nil {
					t.Fatalf("value at %d-%d: %v", r.Partition, r.Offset, err)
				}
				rec.Value = v
			}
			out[k.TransactionalID] = append(out[k.TransactionalID], rec)
		})
	}
	return out
}

// TestTxnStateTopicKgo: a kgo transactional producer
// commits and aborts; a kgo consumer of __transaction_state decodes the
// coordinator's records with kmsg's TxnMetadataKey/TxnMetadataValue: they
// are in the partition Kafka's partitionFor gives the id (50
// partitions), carry its producer id, epoch and timeout, go through
// Ongoing (with the partition), PrepareCommit, CompleteCommit, and end
// with the abort. An id that expires is a tombstone.
func TestTxnStateTopicKgo(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, append(itest.KafkaCoordinatorTopics(), minibrokertest.Topic("orders", 2),
		minibrokertest.Set("transactional.id.expiration.ms", "3000"))...)
	p := itest.TxnClient(t, c.Addr(), "tid-kept", "orders")
	itest.ProduceTxn(t, p, true, "c1", "c2")
	itest.ProduceTxn(t, p, false, "a1")
	q := itest.TxnClient(t, c.Addr(), "tid-expires", "orders")
	itest.ProduceTxn(t, q, true, "x")
	q.Close()

	recs := txnStateTopic(t, c.Addr())
	kept := recs["tid-kept"]
	if len(kept) < 5 {
		t.Fatalf("tid-kept: %d records", len(kept))
	}
	var states []string
	for _, r := range kept {
		if r.Partition != coordinator.PartitionFor("tid-kept", 50) || r.Value == nil {
			t.Fatalf("tid-kept record in partition %d (want %d), value %v", r.Partition, coordinator.PartitionFor("tid-kept", 50), r.Value)
		}
		if r.Value.Version != 1 || r.Value.TimeoutMillis != 30_000 || r.Value.ProducerID != kept[0].Value.ProducerID {
			t.Fatalf("tid-kept record: %+v", *r.Value)
		}
		s := r.Value.State.String()
		if len(r.Value.Topics) > 0 {
			s += "[" + r.Value.Topics[0].Topic + "]"
		}
		if len(states) == 0 || states[len(states)-1] != s {
			states = append(states, s)
		}
	}
	got := strings.Join(states, " ")
	if !strings.HasPrefix(got, "Empty Ongoing[orders] PrepareCommit[orders] CompleteCommit") || !strings.HasSuffix(got, "PrepareAbort[orders] CompleteAbort") {
		t.Fatalf("tid-kept went through %s", got)
	}
	t.Logf("tid-kept: %s", got)

	// tid-expires: idle past transactional.id.expiration.ms, removed with
	// a tombstone (tid-kept expires too; its producer is idle as well).
	adm := itest.KadmClient(t, c.Addr())
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := adm.DescribeTransactions(context.Background(), "tid-expires")
		if err == nil {
			if m, ok := d["tid-expires"]; ok && errors.Is(m.Err, kerr.TransactionalIDNotFound) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("tid-expires did not expire: %v %v", d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	recs = txnStateTopic(t, c.Addr())
	exp := recs["tid-expires"]
	if last := exp[len(exp)-1]; last.Value != nil || last.Partition != coordinator.PartitionFor("tid-expires", 50) {
		t.Fatalf("tid-expires' last record: %+v", last)
	}
}

// legacyTxnLog is a transaction-state.log as an earlier version wrote it:
// internal/coordinator/testdata/txn-log.golden.hex (ids a: Ongoing with
// orders-0 and orders-1 and group g, b: CompleteCommit, c: PrepareCommit
// of orders-0 at transaction version 2; coordinator epoch 4).
func legacyTxnLog(t *testing.T) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "internal", "coordinator", "testdata", "txn-log.golden.hex"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '|'); i > 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		b, err := hex.DecodeString(strings.Join(fields[1:], ""))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// TestTxnStateFromOlderDataDir: a data dir whose
// transaction state is in transaction-state.log, as an earlier version
// left it, starts with every transactional id as it was (the decided
// commit completed), the file gone, the states in __transaction_state;
// after a restart they are read back from the topic alone.
func TestTxnStateFromOlderDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := minibrokertest.Start(t, minibrokertest.DataDir(dir), minibrokertest.Topic("orders", 2))
	c.Close()
	for _, name := range []string{"txn-coordinator-epoch"} {
		os.Remove(filepath.Join(dir, name))
	}
	if err := os.WriteFile(filepath.Join(dir, "transaction-state.log"), legacyTxnLog(t), 0o644); err != nil {
		t.Fatal(err)
	}
	// a's transaction (started in January 2026, 60 s timeout) is aborted
	// by the coordinator at once, its epoch bumped; c's decided commit
	// completes, moving it to its next producer id; b, idle since
	// January 2026, expires (transactional.id.expiration.ms, 7 days).
	want := map[string]string{"a": "CompleteAbort/1000/4", "b": kerr.TransactionalIDNotFound.Error(), "c": "CompleteCommit/1003/0"}
	check := func(c *minibrokertest.Cluster, when string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			d, err := itest.KadmClient(t, c.Addr()).DescribeTransactions(context.Background(), "a", "b", "c")
			got := map[string]string{}
			for id, m := range d {
				got[id] = fmt.Sprintf("%s/%d/%d", m.State, m.ProducerID, m.ProducerEpoch)
				if m.Err != nil {
					got[id] = m.Err.Error()
				}
			}
			if err == nil && fmt.Sprint(got) == fmt.Sprint(want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v (%v), want %v", when, got, err, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	c2 := minibrokertest.Start(t, minibrokertest.DataDir(dir))
	check(c2, "after the upgrade")
	if _, err := os.Stat(filepath.Join(dir, "transaction-state.log")); !os.IsNotExist(err) {
		t.Fatalf("transaction-state.log after the upgrade: %v", err)
	}
	recs := txnStateTopic(t, c2.Addr())
	for _, id := range []string{"a", "b", "c"} {
		if len(recs[id]) == 0 || recs[id][0].Partition != coordinator.PartitionFor(id, 1) || recs[id][0].Value == nil {
			t.Fatalf("%s in __transaction_state: %+v", id, recs[id])
		}
	}
	// b as the upgrade moved it, then its tombstone.
	if b := recs["b"]; b[0].Value.State.String() != "CompleteCommit" || b[0].Value.PreviousProducerID != 999 || b[len(b)-1].Value != nil {
		t.Fatalf("b in __transaction_state: first %+v, %d records", *b[0].Value, len(b))
	}
	c2.Close()
	c3 := minibrokertest.Start(t, minibrokertest.DataDir(dir))
	check(c3, "after a restart")
}

// TestDumpLogTransactionLogDecoder: dump-log
// --transaction-log-decoder prints the coordinator's records of a
// committed and an aborted transaction as kafka-dump-log does.
func TestDumpLogTransactionLogDecoder(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, append(itest.KafkaCoordinatorTopics(), minibrokertest.Topic("orders", 1))...)
	p := itest.TxnClient(t, c.Addr(), "dump-tid", "orders")
	itest.ProduceTxn(t, p, true, "c1")
	itest.ProduceTxn(t, p, false, "a1")
	recs := txnStateTopic(t, c.Addr())["dump-tid"]
	pid := recs[0].Value.ProducerID
	part := coordinator.PartitionFor("dump-tid", 50)
	seg := filepath.Join(c.DataDir(), fmt.Sprintf("__transaction_state-%d", part), "00000000000000000000.log")
	out, errOut, code := itest.RunTool(t, "dump-log", "--transaction-log-decoder", seg)
	if code != 0 {
		t.Fatalf("dump-log: exit %d\n%s\n%s", code, out, errOut)
	}
	key := "key: transaction_metadata::transactionalId=dump-tid payload: "
	for _, want := range []string{
		fmt.Sprintf("%sproducerId:%d,producerEpoch:0,state=Empty,partitions=[],", key, pid),
		",state=Ongoing,partitions=[orders-0],",
		",state=PrepareCommit,partitions=[orders-0],",
		",state=CompleteCommit,partitions=[],",
		",state=PrepareAbort,partitions=[orders-0],",
		",state=CompleteAbort,partitions=[],",
		",txnTimeoutMs=30000",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("dump-log --transaction-log-decoder lacks %q:\n%s", want, out)
		}
	}
}
