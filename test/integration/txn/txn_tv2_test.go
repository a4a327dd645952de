package txn

import (
	"slices"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/minibroker/minibroker/minibrokertest"
)

// tv1Versions caps a client at the transaction version 0/1 protocol
// (Produce v11, EndTxn v4, TxnOffsetCommit v4): what a client that does
// not speak KIP-890 part 2 sends (kgo then adds partitions with
// AddPartitionsToTxn and keeps its epoch).
func tv1Versions() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(0, 11)
	v.SetMaxKeyVersion(26, 4)
	v.SetMaxKeyVersion(28, 4)
	return v
}

// transactionVersion is the transaction.version feature ApiVersions v4
// lists: supported range and finalized level (-1 when not finalized).
func transactionVersion(t *testing.T, addr string) (lo, hi, finalized int16) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "minibroker-test", "1"
	resp, err := req.RequestWith(itest.TxnCtx(t), itest.NewClient(t, addr))
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: %v %v", err, resp)
	}
	lo, hi, finalized = -1, -1, -1
	for _, f := range resp.SupportedFeatures {
		if f.Name == "transaction.version" {
			lo, hi = f.MinVersion, f.MaxVersion
		}
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			finalized = f.MaxVersionLevel
			if f.MinVersionLevel != f.MaxVersionLevel || resp.FinalizedFeaturesEpoch < 0 {
				t.Fatalf("finalized %+v at epoch %d", f, resp.FinalizedFeaturesEpoch)
			}
		}
	}
	return lo, hi, finalized
}

// TestTxnTV2Kgo: minibroker finalizes transaction.version 2 (supported
// 0–2), as a Kafka 4 cluster formatted at its release does, and kgo
// (franz-go v1.22.3) then uses transactions v2 by itself: it sends no
// AddPartitionsToTxn (Produce v12 adds the partition), and every commit
// and abort bumps its producer epoch (EndTxn v5). Commits are visible to
// read_committed, aborts are not. A client capped at the older protocol
// on the same broker adds partitions and keeps its epoch (transaction
// version 0/1 still served). UpdateFeatures finalizing level 1 makes a new
// kgo client use the old protocol, and the level survives a restart.
func TestTxnTV2Kgo(t *testing.T) {
	const topic = "tv2"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 1), minibrokertest.HTTP())
	if lo, hi, fin := transactionVersion(t, c.Addr()); lo != 0 || hi != 2 || fin != 2 {
		t.Fatalf("transaction.version supported %d-%d finalized %d, want 0-2 and 2", lo, hi, fin)
	}
	adds := func() int64 {
		return itest.Counter(t, c.HTTPAddr(), `minibroker_requests_total{api="AddPartitionsToTxn"}`)
	}

	p := itest.TxnClient(t, c.Addr(), "tv2-kgo", topic)
	itest.ProduceTxn(t, p, true, "c1", "c2")
	e1 := itest.TxnEpoch(t, c.Addr(), "tv2-kgo")
	itest.ProduceTxn(t, p, false, "a1")
	itest.ProduceTxn(t, p, true, "c3")
	e3 := itest.TxnEpoch(t, c.Addr(), "tv2-kgo")
	if n := adds(); n != 0 {
		t.Errorf("kgo sent %d AddPartitionsToTxn under transaction.version 2, want 0", n)
	}
	if e3 != e1+2 {
		t.Errorf("epoch %d after the first commit, %d two transactions later: want a bump per EndTxn", e1, e3)
	}
	if got := itest.ReadTxnValues(t, c.Addr(), topic, true); !sameSet(got, []string{"c1", "c2", "c3"}) {
		t.Errorf("read_committed got %q, want c1 c2 c3", got)
	}

	// A client of the older protocol on the same broker.
	old := itest.TxnClient(t, c.Addr(), "tv1-kgo", topic, kgo.MaxVersions(tv1Versions()))
	itest.ProduceTxn(t, old, true, "o1")
	o1 := itest.TxnEpoch(t, c.Addr(), "tv1-kgo")
	itest.ProduceTxn(t, old, true, "o2")
	if n, o2 := adds(), itest.TxnEpoch(t, c.Addr(), "tv1-kgo"); n == 0 || o2 != o1 {
		t.Errorf("capped client: %d AddPartitionsToTxn, epoch %d then %d; want some and no bump", n, o1, o2)
	}

	// Finalize level 1: a new kgo client uses the older protocol.
	resp, err := kadm.NewClient(itest.NewClient(t, c.Addr())).UpdateFeatures(itest.TxnCtx(t), false,
		kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 1, UpgradeType: 2}) // SAFE_DOWNGRADE
	if err != nil {
		t.Fatalf("UpdateFeatures: %v", err)
	}
	if err := resp.Error(); err != nil {
		t.Fatalf("UpdateFeatures: %v", err)
	}
	c.Restart()
	if _, _, fin := transactionVersion(t, c.Addr()); fin != 1 {
		t.Fatalf("after UpdateFeatures and a restart transaction.version finalized %d, want 1", fin)
	}
	before := adds()
	p1 := itest.TxnClient(t, c.Addr(), "tv2-kgo", topic)
	itest.ProduceTxn(t, p1, true, "d1")
	d1 := itest.TxnEpoch(t, c.Addr(), "tv2-kgo")
	itest.ProduceTxn(t, p1, true, "d2")
	if n, d2 := adds()-before, itest.TxnEpoch(t, c.Addr(), "tv2-kgo"); n == 0 || d2 != d1 {
		t.Errorf("at level 1: %d AddPartitionsToTxn, epoch %d then %d; want some and no bump", n, d1, d2)
	}
	if got := itest.ReadTxnValues(t, c.Addr(), topic, true); !sameSet(got, []string{"c1", "c2", "c3", "o1", "o2", "d1", "d2"}) {
		t.Errorf("read_committed got %q", got)
	}

	// Kafka 3.9's ranges: EndTxn v5 is not served, no feature is listed.
	c39 := minibrokertest.Start(t, itest.Kafka39)
	if lo, hi, fin := transactionVersion(t, c39.Addr()); lo != -1 || hi != -1 || fin != -1 {
		t.Errorf("client.protocol.version=3.9: transaction.version %d-%d finalized %d, want none", lo, hi, fin)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestTxnTV2OffsetCommitAndAbortable: TxnOffsetCommit v5 joins the group
// to the transaction itself (no AddOffsetsToTxn): the offsets are
// invisible until the commit and visible after it. TxnOffsetCommit v4
// for a group not in the transaction is TRANSACTION_ABORTABLE (KIP-890).
func TestTxnTV2OffsetCommitAndAbortable(t *testing.T) {
	const topic = "tv2o"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 1))
	cl := itest.NewClient(t, c.Addr())
	ctx := itest.TxnCtx(t)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr("tv2o"), 30_000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("init: %v %+v", err, ir)
	}
	offsetCommit := func(version int16, group string, offset int64) int16 {
		t.Helper()
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(28, version)
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tv2o", group, ir.ProducerID, ir.ProducerEpoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, itest.NewClient(t, c.Addr(), kgo.MaxVersions(vs)))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Version != version {
			t.Fatalf("TxnOffsetCommit sent as v%d, want v%d", resp.Version, version)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := offsetCommit(4, "g4", 7); code != kerr.TransactionAbortable.Code {
		t.Fatalf("v4, group not in the transaction: %v, want TRANSACTION_ABORTABLE", kerr.ErrorForCode(code))
	}
	if code := offsetCommit(3, "g4", 7); code != kerr.InvalidTxnState.Code {
		t.Fatalf("v3, group not in the transaction: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	if code := offsetCommit(5, "g5", 42); code != 0 {
		t.Fatalf("v5: %v, want NONE", kerr.ErrorForCode(code))
	}
	adm := kadm.NewClient(cl)
	fetched := func() int64 {
		t.Helper()
		os, err := adm.FetchOffsets(ctx, "g5")
		if err != nil {
			t.Fatal(err)
		}
		o, ok := os.Lookup(topic, 0)
		if !ok {
			return -1
		}
		return o.At
	}
	if at := fetched(); at != -1 {
		t.Fatalf("offset visible before the commit: %d", at)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "tv2o", ir.ProducerID, ir.ProducerEpoch, true
	er, err := end.RequestWith(ctx, cl)
	if err != nil || er.ErrorCode != 0 || er.Version < 5 || er.ProducerEpoch != ir.ProducerEpoch+1 {
		t.Fatalf("EndTxn: %v %+v", err, er)
	}
	if at := fetched(); at != 42 {
		t.Fatalf("offset after the commit: %d, want 42", at)
	}
}

// TestKversionGuessWithTV2: minibroker serves the transaction APIs at
// Kafka 4.0's versions (Produce v12, AddPartitionsToTxn v5, EndTxn v5,
// TxnOffsetCommit v5), which kversion (franz-go) checks when it guesses a
// release: the guess was "v3.5–3.6" in make ecosystem before transactions
// v2; with them (and KIP-848's ConsumerGroupHeartbeat/Describe) no
// client-facing key of Kafka 4.0 is missing, and kversion answers "at
// least v3.9" (it cannot say 4.x because minibroker serves some APIs at
// versions newer than 4.0's, which it reads as a custom build).
func TestKversionGuessWithTV2(t *testing.T) {
	c := minibrokertest.Start(t)
	vs, err := kadm.NewClient(itest.NewClient(t, c.Addr())).ApiVersions(itest.TxnCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	k4 := kversion.V4_0_0()
	for _, v := range vs.Sorted() {
		if v.Err != nil {
			t.Fatal(v.Err)
		}
		for _, key := range []int16{0, 24, 26, 28} {
			want, _ := k4.LookupMaxKeyVersion(key)
			if _, got, _ := v.KeyVersions(key); got != want {
				t.Errorf("%s max v%d, Kafka 4.0 v%d", kmsg.NameForKey(key), got, want)
			}
		}
		guess := v.VersionGuess()
		t.Logf("kversion guess: %q", guess)
		if strings.Contains(guess, "v3.5") {
			t.Errorf("kversion guesses %q, the guess before transactions v2", guess)
		}
		var missing []int16
		mine := kversion.FromApiVersionsResponse(v.Raw())
		for key := int16(0); key < 100; key++ {
			_, in4 := k4.LookupMaxKeyVersion(key)
			if _, ok := mine.LookupMaxKeyVersion(key); in4 && !ok && key != 4 && key != 5 && key != 6 && key != 7 &&
				key != 56 && key != 58 && key != 67 { // broker-to-broker and KRaft-internal keys
				missing = append(missing, key)
			}
		}
		t.Logf("Kafka 4.0 client-facing keys not served: %v", missing)
	}
}

// TestAddPartitionsToTxnV5VerifyAndAdd: the broker-to-broker form of
// AddPartitionsToTxn (v4+, what Kafka's brokers send the coordinator): a
// verify-only transaction answers NONE for a partition in the open
// transaction (added here by a Produce v12) and TRANSACTION_ABORTABLE for
// one not in it, PRODUCER_FENCED for every partition at a stale epoch;
// one not verify-only (v5) adds its partitions. It needs CLUSTER_ACTION
// on the cluster: alice (no ACL) gets CLUSTER_AUTHORIZATION_FAILED, the
// super user does not.
func TestAddPartitionsToTxnV5VerifyAndAdd(t *testing.T) {
	const topic = "apt5"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 2))
	cl := itest.NewClient(t, c.Addr())
	ctx := itest.TxnCtx(t)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr("apt5"), 30_000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("init: %v %+v", err, ir)
	}
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis, pr.TransactionID = -1, 5000, kmsg.StringPtr("apt5")
	prt := kmsg.NewProduceRequestTopic()
	prt.Topic = topic
	prp := kmsg.NewProduceRequestTopicPartition()
	prp.Partition, prp.Records = 0, txnBatch([]byte("x"), ir.ProducerID, ir.ProducerEpoch, 0)
	prt.Partitions = append(prt.Partitions, prp)
	pr.Topics = append(pr.Topics, prt)
	presp, err := pr.RequestWith(ctx, cl)
	if err != nil || presp.Version < 12 || presp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce v12: %v %+v", err, presp)
	}
	apt := func(epoch int16, verifyOnly bool, parts ...int32) map[int32]int16 {
		t.Helper()
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "apt5", ir.ProducerID, epoch, verifyOnly
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = topic, parts
		tx.Topics = append(tx.Topics, tt)
		req.Transactions = append(req.Transactions, tx)
		// Straight to the broker: kgo's sharded path sends a lone
		// transaction that is not verify-only in the client form (v3).
		kresp, err := cl.Broker(int(c.Broker().NodeID())).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
		if resp.ErrorCode != 0 || len(resp.Transactions) != 1 || resp.Version != 5 {
			t.Fatalf("AddPartitionsToTxn: %+v", resp)
		}
		out := map[int32]int16{}
		for _, rt := range resp.Transactions[0].Topics {
			for _, rp := range rt.Partitions {
				out[rp.Partition] = rp.ErrorCode
			}
		}
		return out
	}
	if got := apt(ir.ProducerEpoch, true, 0, 1); got[0] != 0 || got[1] != kerr.TransactionAbortable.Code {
		t.Fatalf("verify p0 (added by the produce) and p1: %v, want NONE and TRANSACTION_ABORTABLE", got)
	}
	if got := apt(ir.ProducerEpoch-1, true, 0); got[0] != kerr.ProducerFenced.Code {
		t.Fatalf("verify at a stale epoch: %v, want PRODUCER_FENCED", got)
	}
	if got := apt(ir.ProducerEpoch, false, 1); got[1] != 0 {
		t.Fatalf("add p1: %v, want NONE", got)
	}
	if got := apt(ir.ProducerEpoch, true, 0, 1); got[0] != 0 || got[1] != 0 {
		t.Fatalf("verify after the add: %v, want NONE for both", got)
	}

	a := itest.AclBroker(t, true)
	for user, want := range map[string]int16{"alice": kerr.ClusterAuthorizationFailed.Code, "admin": 0} {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.VerifyOnly = "nobody", 1, true
		req.Transactions = append(req.Transactions, tx)
		kresp, err := itest.AclClient(t, a, user).Broker(int(a.Broker().NodeID())).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if got := kresp.(*kmsg.AddPartitionsToTxnResponse).ErrorCode; got != want {
			t.Errorf("%s: %v, want %v", user, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
	}
}
