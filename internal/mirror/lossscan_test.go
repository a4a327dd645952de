package mirror

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/batch"
	mlog "github.com/minibroker/minibroker/internal/log"
)

// dataBatch encodes n records at base, as a producer's batch (pid < 0:
// none), CreateTime unless logAppend.
func dataBatch(base int64, n int32, pid int64, txn, logAppend bool, firstTS, maxTS int64) []byte {
	var body []byte
	for i := int32(0); i < n; i++ {
		rec := kmsg.Record{OffsetDelta: i, Value: []byte("v")}
		rec.Length = int32(len(rec.AppendTo(nil)) - kbin.VarintLen(0))
		body = rec.AppendTo(body)
	}
	var attrs int16
	if txn {
		attrs |= batch.AttrTransactional
	}
	if logAppend {
		attrs |= batch.AttrTimestampType
	}
	rb := kmsg.RecordBatch{FirstOffset: base, Magic: 2, Attributes: attrs, LastOffsetDelta: n - 1,
		FirstTimestamp: firstTS, MaxTimestamp: maxTS, ProducerID: pid, FirstSequence: 0, NumRecords: n, Records: body}
	rb.Length = int32(batch.HeaderSize - batch.LogOverhead + len(body))
	out := rb.AppendTo(nil)
	batch.SetCRC(out)
	return out
}

func marker(base int64, commit bool, pid int64, ts int64) []byte {
	b := batch.EndTxnBatch(commit, pid, 0, 0, ts)
	binary.BigEndian.PutUint64(b, uint64(base))
	return b
}

// TestLossScan: the plan's classification of the batches a failover
// loses. 0–1 plain; 2–3 producer 7's transaction, committed at 6; 4
// producer 8's, aborted at 7; 5 producer 9's, never ended. Scanned from
// 1 (the batch holding it counts whole, as a fetch answers it), in two
// feeds (local, then the source's): lost = 2 plain + 2 committed,
// aborted 1, 1 record of 1 transaction still open, and the timestamps
// of the lost ones only (producer 8's and 9's are later).
func TestLossScan(t *testing.T) {
	local := append(dataBatch(0, 2, -1, false, false, 100, 110), dataBatch(2, 2, 7, true, false, 120, 125)...)
	var src []byte
	src = append(src, dataBatch(4, 1, 8, true, false, 900, 900)...)
	src = append(src, dataBatch(5, 1, 9, true, false, 950, 950)...)
	src = append(src, marker(6, true, 7, 130)...)
	src = append(src, marker(7, false, 8, 140)...)
	s := newLossScan(1)
	s.local = true // as scanLocal sets it
	if !s.feed(local, 4) || s.next != 4 {
		t.Fatalf("local feed: next %d", s.next)
	}
	s.local = false
	if !s.feed(append(local, src...), 8) || s.next != 8 {
		t.Fatalf("source feed: next %d", s.next)
	}
	open, txns := s.open()
	if s.lost != 4 || s.aborted != 1 || open != 1 || txns != 1 || s.controls != 2 {
		t.Fatalf("lost %d aborted %d open %d in %d controls %d", s.lost, s.aborted, open, txns, s.controls)
	}
	if s.oldestTS != 100 || s.newestTS != 125 || s.tsType != "CreateTime" {
		t.Fatalf("timestamps %d..%d %s", s.oldestTS, s.newestTS, s.tsType)
	}
	// abort-open-transactions keeps the 2 plain records of the local log
	// and aborts producer 7's transaction, open locally and committed at
	// the source: its 2 records are the mode's loss, its RPO theirs.
	if s.keptByAbort != 2 || s.lostPastLocal != 2 || s.pastOldestTS != 120 || s.pastNewestTS != 125 {
		t.Fatalf("abort mode: kept %d, lost %d (%d..%d)", s.keptByAbort, s.lostPastLocal, s.pastOldestTS, s.pastNewestTS)
	}
	// LogAppendTime: every record has the batch's max timestamp.
	s = newLossScan(0)
	s.feed(dataBatch(0, 3, -1, false, true, 5, 700), 3)
	if s.oldestTS != 700 || s.newestTS != 700 || s.tsType != "LogAppendTime" || s.lost != 3 {
		t.Fatalf("LogAppendTime: %d..%d %s lost %d", s.oldestTS, s.newestTS, s.tsType, s.lost)
	}
	// The limit stops the scan: nothing at or past it counts.
	s = newLossScan(0)
	s.feed(append(dataBatch(0, 1, -1, false, false, 1, 1), dataBatch(1, 1, -1, false, false, 2, 2)...), 1)
	if s.lost != 1 || s.next != 1 {
		t.Fatalf("limit: lost %d next %d", s.lost, s.next)
	}
}

// TestDivergenceCut: the search PREPARING, the plan and a start's dry run
// share. The local log: epoch 0 at 0..4, epoch 1 (a failover's barrier
// and writes) from 5 to 8.
func TestDivergenceCut(t *testing.T) {
	v := mlog.NewEpochView([]mlog.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 5}}, 0, 8)
	ask := func(answers map[int32][2]int64) askEpoch {
		return func(e int32) (int32, int64, error) {
			a, ok := answers[e]
			if !ok {
				return -1, -1, nil
			}
			return int32(a[0]), a[1], nil
		}
	}
	cases := []struct {
		name       string
		answers    map[int32][2]int64
		noWalkBack bool
		want       int64
	}{
		// The source never had epoch 1 (UNDEFINED), knows epoch 0 up to 7:
		// walk back, cut where our epoch 0 ends (5).
		{"walk back", map[int32][2]int64{0: {0, 7}}, false, 5},
		{"no walk back (negative control)", map[int32][2]int64{0: {0, 7}}, true, 0},
		// The source has epoch 1 too, ending at 6: cut at 6.
		{"same epoch", map[int32][2]int64{1: {1, 6}}, false, 6},
		// The source's largest epoch ≤ 1 is 0, ending at 3: cut at 3.
		{"older epoch", map[int32][2]int64{1: {0, 3}, 0: {0, 3}}, false, 3},
		// The source has all of it: nothing to cut.
		{"aligned", map[int32][2]int64{1: {1, 9}}, false, 8},
	}
	for _, c := range cases {
		got, err := divergenceCut(v, ask(c.answers), c.noWalkBack)
		if err != nil || got != c.want {
			t.Errorf("%s: cut %d (%v), want %d", c.name, got, err, c.want)
		}
	}
	if v.End() != 8 || len(v.Entries()) != 2 {
		t.Fatalf("the search changed the view: %+v", v)
	}
}
