package share

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

var t0 = time.Unix(1000, 0)

func cfg() Config {
	return Config{LockDuration: 30 * time.Second, DeliveryLimit: 3, MaxInFlight: 10}
}

// log is a log of one-record batches at offsets from…to-1.
func log(from, to int64) []Batch {
	var bs []Batch
	for o := from; o < to; o++ {
		bs = append(bs, Batch{First: o, Last: o})
	}
	return bs
}

func acquire(p *Partition, now time.Time, m string, max int, limit int64, bs []Batch) []Range {
	return p.Acquire(now, m, max, p.FetchOffset(), limit, bs)
}

func TestAcquireAcceptAdvancesSPSO(t *testing.T) {
	p := NewPartition(cfg(), 0)
	got := acquire(p, t0, "a", 5, 100, log(0, 100))
	if want := []Range{{0, 4, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	// Another member gets the next ones, never the same.
	got = acquire(p, t0, "b", 3, 100, log(5, 100))
	if want := []Range{{5, 7, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("b acquired %v, want %v", got, want)
	}
	if _, err := p.Ack(t0, "a", []AckBatch{{0, 4, []int8{AckAccept}}}); err != nil {
		t.Fatal(err)
	}
	if p.Start() != 5 || p.End() != 8 {
		t.Fatalf("SPSO %d end %d, want 5 8", p.Start(), p.End())
	}
	// b cannot acknowledge a's records, nor a b's.
	if _, err := p.Ack(t0, "a", []AckBatch{{5, 5, []int8{AckAccept}}}); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("a acking b's record: %v", err)
	}
	// Past the window: invalid request.
	if _, err := p.Ack(t0, "b", []AckBatch{{5, 9, []int8{AckAccept}}}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("ack past the window: %v", err)
	}
	// Acknowledging twice: the second is below the SPSO, skipped.
	if _, err := p.Ack(t0, "b", []AckBatch{{5, 7, []int8{AckAccept}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Ack(t0, "b", []AckBatch{{5, 7, []int8{AckAccept}}}); err != nil {
		t.Fatalf("re-ack below the SPSO: %v", err)
	}
	if p.Start() != 8 || p.InFlight() != 0 {
		t.Fatalf("SPSO %d in flight %d", p.Start(), p.InFlight())
	}
}

func TestAckAllOrNothing(t *testing.T) {
	p := NewPartition(cfg(), 0)
	acquire(p, t0, "a", 2, 100, log(0, 100))
	acquire(p, t0, "b", 2, 100, log(2, 100))
	// The first batch is fine, the second is b's: nothing applied.
	_, err := p.Ack(t0, "a", []AckBatch{{0, 1, []int8{AckAccept}}, {2, 2, []int8{AckAccept}}})
	if !errors.Is(err, ErrInvalidRecordState) {
		t.Fatal(err)
	}
	if s, _ := p.StateOf(0); s != Acquired {
		t.Fatalf("offset 0 %v after a refused ack", s)
	}
}

func TestReleaseRedeliversWithCountThenArchives(t *testing.T) {
	p := NewPartition(cfg(), 0)
	for delivery := int16(1); delivery <= 3; delivery++ {
		got := acquire(p, t0, "a", 1, 100, log(0, 100))
		if want := []Range{{0, 0, delivery}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("delivery %d: %v", delivery, got)
		}
		released, err := p.Ack(t0, "a", []AckBatch{{0, 0, []int8{AckRelease}}})
		if err != nil {
			t.Fatal(err)
		}
		if released != (delivery < 3) {
			t.Fatalf("delivery %d released=%v", delivery, released)
		}
	}
	// The third release reached the limit: archived, SPSO past it.
	if p.Start() != 1 {
		t.Fatalf("SPSO %d, want 1 (offset 0 archived)", p.Start())
	}
	if got := acquire(p, t0, "a", 1, 100, log(0, 100)); !reflect.DeepEqual(got, []Range{{1, 1, 1}}) {
		t.Fatalf("next acquisition %v", got)
	}
}

func TestRejectArchivesAndPerOffsetTypes(t *testing.T) {
	p := NewPartition(cfg(), 0)
	acquire(p, t0, "a", 4, 100, log(0, 100))
	released, err := p.Ack(t0, "a", []AckBatch{{0, 3, []int8{AckAccept, AckReject, AckRelease, AckGap}}})
	if err != nil || !released {
		t.Fatalf("released %v err %v", released, err)
	}
	for off, want := range []State{Acknowledged, Archived, Available, Archived} {
		if s, _ := p.StateOf(int64(off)); off >= 2 && s != want {
			t.Fatalf("offset %d %v want %v", off, s, want)
		}
	}
	if p.Start() != 2 {
		t.Fatalf("SPSO %d want 2", p.Start())
	}
	// The released offset comes back first, with its count raised.
	if got := acquire(p, t0, "b", 1, 100, log(2, 100)); !reflect.DeepEqual(got, []Range{{2, 2, 2}}) {
		t.Fatalf("redelivery %v", got)
	}
}

func TestLockExpiryReleases(t *testing.T) {
	p := NewPartition(cfg(), 0)
	acquire(p, t0, "a", 3, 100, log(0, 100))
	if d, ok := p.NextDeadline(); !ok || !d.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("deadline %v %v", d, ok)
	}
	if n := p.ExpireLocks(t0.Add(29 * time.Second)); n != 0 {
		t.Fatalf("expired %d before the deadline", n)
	}
	if n := p.ExpireLocks(t0.Add(30 * time.Second)); n != 3 {
		t.Fatalf("expired %d, want 3", n)
	}
	// a's late ack is refused; b gets them at delivery 2.
	if _, err := p.Ack(t0, "a", []AckBatch{{0, 2, []int8{AckAccept}}}); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("late ack: %v", err)
	}
	if got := acquire(p, t0, "b", 5, 3, log(0, 3)); !reflect.DeepEqual(got, []Range{{0, 2, 2}}) {
		t.Fatalf("reacquired %v", got)
	}
	// RENEW moves the deadline.
	if _, err := p.Ack(t0.Add(20*time.Second), "b", []AckBatch{{0, 0, []int8{AckRenew}}}); err != nil {
		t.Fatal(err)
	}
	if n := p.ExpireLocks(t0.Add(31 * time.Second)); n != 2 {
		t.Fatalf("expired %d, want 2 (offset 0 renewed)", n)
	}
	if s, _ := p.StateOf(0); s != Acquired {
		t.Fatalf("renewed offset %v", s)
	}
	// The expiry at the delivery limit archives.
	p.ExpireLocks(t0.Add(time.Hour))
	if got := acquire(p, t0, "c", 5, 3, log(0, 3)); !reflect.DeepEqual(got, []Range{{0, 2, 3}}) {
		t.Fatalf("third delivery %v", got)
	}
	p.ExpireLocks(t0.Add(2 * time.Hour))
	if p.Start() != 3 || p.InFlight() != 0 {
		t.Fatalf("after the third expiry SPSO %d in flight %d, want 3 0 (archived)", p.Start(), p.InFlight())
	}
}

func TestInFlightLimit(t *testing.T) {
	p := NewPartition(cfg(), 0)
	if got := acquire(p, t0, "a", 100, 100, log(0, 100)); !reflect.DeepEqual(got, []Range{{0, 9, 1}}) {
		t.Fatalf("acquired %v, want the first 10 (MaxInFlight)", got)
	}
	if p.CanAcquire(100) {
		t.Fatal("CanAcquire with a full window")
	}
	if got := acquire(p, t0, "b", 100, 100, log(10, 100)); got != nil {
		t.Fatalf("b acquired %v past a full window", got)
	}
	// A release inside the window may be acquired; the window stays.
	p.Ack(t0, "a", []AckBatch{{3, 3, []int8{AckRelease}}})
	if got := acquire(p, t0, "b", 100, 100, log(3, 100)); !reflect.DeepEqual(got, []Range{{3, 3, 2}}) {
		t.Fatalf("b acquired %v", got)
	}
	p.Ack(t0, "a", []AckBatch{{0, 2, []int8{AckAccept}}})
	if got := acquire(p, t0, "b", 100, 100, log(10, 100)); !reflect.DeepEqual(got, []Range{{10, 12, 1}}) {
		t.Fatalf("after 3 accepted b acquired %v", got)
	}
}

func TestSkipBatchesAndHoles(t *testing.T) {
	p := NewPartition(cfg(), 0)
	// 0-2 data, 3 a control batch, 4-5 aborted, then a hole (6-7
	// compacted away), 8 data.
	bs := []Batch{{0, 2, false}, {3, 3, true}, {4, 5, true}, {8, 8, false}}
	got := acquire(p, t0, "a", 100, 9, bs)
	if want := []Range{{0, 2, 1}, {8, 8, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	for off := int64(3); off <= 7; off++ {
		if s, _ := p.StateOf(off); s != Archived {
			t.Fatalf("offset %d %v, want ARCHIVED", off, s)
		}
	}
	p.Ack(t0, "a", []AckBatch{{0, 2, []int8{AckAccept}}, {8, 8, []int8{AckAccept}}})
	if p.Start() != 9 || p.InFlight() != 0 {
		t.Fatalf("SPSO %d in flight %d", p.Start(), p.InFlight())
	}
	// The limit (LSO) stops acquisition.
	if got := acquire(p, t0, "a", 100, 10, log(9, 20)); !reflect.DeepEqual(got, []Range{{9, 9, 1}}) {
		t.Fatalf("acquired %v below limit 10", got)
	}
}

func TestReleaseMemberAndMoveStart(t *testing.T) {
	p := NewPartition(cfg(), 0)
	acquire(p, t0, "a", 2, 100, log(0, 100))
	acquire(p, t0, "b", 2, 100, log(2, 100))
	if n := p.ReleaseMember("a"); n != 2 {
		t.Fatalf("released %d", n)
	}
	if p.FetchOffset() != 0 {
		t.Fatalf("fetch offset %d", p.FetchOffset())
	}
	p.MoveStart(3)
	if p.Start() != 3 || p.End() != 4 {
		t.Fatalf("after MoveStart(3): %d %d", p.Start(), p.End())
	}
	p.MoveStart(50)
	if p.Start() != 50 || p.InFlight() != 0 {
		t.Fatalf("after MoveStart(50): %d %d", p.Start(), p.InFlight())
	}
}

func TestSnapshotRestore(t *testing.T) {
	p := NewPartition(cfg(), 5)
	acquire(p, t0, "a", 6, 100, log(5, 100))
	p.Ack(t0, "a", []AckBatch{{6, 7, []int8{AckAccept}}, {8, 8, []int8{AckRelease}}, {9, 9, []int8{AckReject}}})
	s := p.Snapshot()
	want := Snapshot{Start: 5, Batches: []StateBatch{
		{5, 5, Available, 1}, {6, 7, Acknowledged, 1}, {8, 8, Available, 1}, {9, 9, Archived, 1}, {10, 10, Available, 1},
	}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("snapshot %+v\nwant %+v", s, want)
	}
	q := Restore(cfg(), s)
	// Acquired records come back AVAILABLE; acknowledged ones never.
	got := acquire(q, t0, "b", 100, 12, log(5, 12))
	if want := []Range{{5, 5, 2}, {8, 8, 2}, {10, 10, 2}, {11, 11, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after restore acquired %v, want %v", got, want)
	}
}

func TestValidateBatches(t *testing.T) {
	ok := []AckBatch{{0, 1, []int8{1}}, {2, 4, []int8{1, 2, 3}}}
	if err := ValidateBatches(ok, false); err != nil {
		t.Fatal(err)
	}
	bad := [][]AckBatch{
		{{2, 1, []int8{1}}},
		{{0, 1, []int8{1}}, {1, 2, []int8{1}}},
		{{0, 1, nil}},
		{{0, 2, []int8{1, 1}}},
		{{0, 0, []int8{5}}},
		{{0, 0, []int8{AckRenew}}},
	}
	for i, b := range bad {
		if err := ValidateBatches(b, false); !errors.Is(err, ErrInvalidRequest) {
			t.Fatalf("case %d: %v", i, err)
		}
	}
	if err := ValidateBatches([]AckBatch{{0, 0, []int8{AckRenew}}}, true); err != nil {
		t.Fatal(err)
	}
}
