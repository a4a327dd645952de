package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// txnRecordBatch is one transactional batch of one record at seq.
func txnRecordBatch(pid int64, epoch int16, seq int32, value string) []byte {
	r := kmsg.Record{Value: []byte(value)}
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	recs := r.AppendTo(nil)
	now := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{Magic: 2, Attributes: 0x10, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: 1, Records: recs}
	rb.Length = int32(61 - 12 + len(recs))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// TestTV2EpochBumpFencesZombie is KIP-890 part 2's reason for the epoch
// bump, with its negative control. A producer speaking transaction
// version 2 (Produce v12, EndTxn v5, raw requests over TCP) commits a
// first transaction at epoch e0 and starts a second with a record. Then a
// zombie — the same producer's EndTxn(commit) of the first transaction,
// late — arrives at e0, and so does a late record at e0. With the bump
// (EndTxn v5 answers e0+1 and the second transaction runs at it) the
// zombie's commit is PRODUCER_FENCED and its record INVALID_PRODUCER_EPOCH,
// and the second transaction's record stays invisible to read_committed
// until its own producer commits. With the bump removed (noTV2EpochBump:
// EndTxn v5 keeps the epoch, as version 0 does) the late commit is
// accepted and commits the second transaction behind its producer's back:
// a read_committed reader sees its record while that producer has not
// decided anything.
func TestTV2EpochBumpFencesZombie(t *testing.T) {
	for _, noBump := range []bool{false, true} {
		t.Run(fmt.Sprintf("noTV2EpochBump=%v", noBump), func(t *testing.T) {
			b := startMirrorBroker(t, zap.NewNop(), func(b *Broker) { b.knobs.noTV2EpochBump = noBump })
			if _, err := b.CreateTopic("z", 1, nil, [16]byte{}, false); err != nil {
				t.Fatal(err)
			}
			cl := newTxnTestClient(t, b.Addr())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			const id = "zombie"
			init := kmsg.NewPtrInitProducerIDRequest()
			init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(id), 60_000
			ir, err := init.RequestWith(ctx, cl)
			if err != nil || ir.ErrorCode != 0 {
				t.Fatalf("InitProducerId: %v %v", err, kerr.ErrorForCode(ir.ErrorCode))
			}
			pid, e0 := ir.ProducerID, ir.ProducerEpoch
			produce := func(epoch int16, seq int32, value string) (int16, int16) {
				t.Helper()
				req := produceReq("z", id, txnRecordBatch(pid, epoch, seq, value))
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					t.Fatal(err)
				}
				return resp.Version, resp.Topics[0].Partitions[0].ErrorCode
			}
			end := func(epoch int16, commit bool) *kmsg.EndTxnResponse {
				t.Helper()
				req := kmsg.NewPtrEndTxnRequest()
				req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Version < 5 {
					t.Fatalf("EndTxn sent as v%d, want v5", resp.Version)
				}
				return resp
			}
			// Transaction 1: its partition joins with the Produce itself.
			if v, code := produce(e0, 0, "t1"); v < 12 || code != 0 {
				t.Fatalf("produce t1: v%d %v", v, kerr.ErrorForCode(code))
			}
			r1 := end(e0, true)
			if r1.ErrorCode != 0 || r1.ProducerID != pid {
				t.Fatalf("commit t1: %v, id %d", kerr.ErrorForCode(r1.ErrorCode), r1.ProducerID)
			}
			e1 := r1.ProducerEpoch
			wantE1 := e0 + 1
			if noBump {
				wantE1 = e0
			}
			if e1 != wantE1 {
				t.Fatalf("commit t1 answered epoch %d, want %d", e1, wantE1)
			}
			// Transaction 2, open, by the live producer.
			seq := int32(0)
			if noBump {
				seq = 1
			}
			if _, code := produce(e1, seq, "t2"); code != 0 {
				t.Fatalf("produce t2: %v", kerr.ErrorForCode(code))
			}
			// The zombie: t1's record and commit, late, at e0.
			_, lateCode := produce(e0, 0, "late")
			late := end(e0, true)
			committed := readCommittedValues(t, b.Addr(), "z")
			t.Logf("late record answered %v; late commit answered %v (epoch %d); read_committed sees %q",
				kerr.ErrorForCode(lateCode), kerr.ErrorForCode(late.ErrorCode), late.ProducerEpoch, committed)
			if !noBump {
				if lateCode != kerr.InvalidProducerEpoch.Code {
					t.Errorf("late record at the old epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(lateCode))
				}
				if late.ErrorCode != kerr.ProducerFenced.Code || late.ProducerID != -1 || late.ProducerEpoch != -1 {
					t.Errorf("late commit at the old epoch: %v (%d/%d), want PRODUCER_FENCED (-1/-1)", kerr.ErrorForCode(late.ErrorCode), late.ProducerID, late.ProducerEpoch)
				}
				if fmt.Sprint(committed) != "[t1]" {
					t.Errorf("read_committed sees %q, want only t1 (t2 undecided)", committed)
				}
				// The live producer still owns its transaction.
				if r := end(e1, true); r.ErrorCode != 0 || r.ProducerEpoch != e1+1 {
					t.Errorf("commit t2: %v epoch %d, want NONE at %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch, e1+1)
				}
				return
			}
			// The rule removed: the failure it prevents.
			if late.ErrorCode != 0 {
				t.Fatalf("without the bump the late commit answered %v, want success (the failure the bump prevents)", kerr.ErrorForCode(late.ErrorCode))
			}
			if fmt.Sprint(committed) != "[t1 t2]" {
				t.Fatalf("without the bump read_committed sees %q, want t1 and t2 (committed by the zombie)", committed)
			}
		})
	}
}

// readCommittedValues reads topic's partition 0 read_committed up to its
// last stable offset.
func readCommittedValues(t *testing.T, addr, topic string) []string {
	t.Helper()
	cl := newTxnTestClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var out []string
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
}
