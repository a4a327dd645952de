package batch

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestBarrierRoundTrip(t *testing.T) {
	raw := BarrierBatch("cluster-A", 1234)
	h, err := Validate(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !h.IsControl() || h.IsTransactional() || h.ProducerID != -1 || h.ProducerEpoch != -1 || h.BaseSequence != -1 || h.NumRecords != 1 {
		t.Fatalf("bad barrier header %+v", h)
	}
	c, err := ReadControl(raw)
	if err != nil {
		t.Fatal(err)
	}
	if c.Type != ControlMirrorPidReset || len(c.Key) != 4 || c.Version != 0 {
		t.Fatalf("bad control %+v", c)
	}
	var v MirrorPidResetRecord
	if err := v.ReadFrom(c.Value); err != nil || v.SourceClusterID != "cluster-A" {
		t.Fatalf("value %+v %v", v, err)
	}
	if !IsBarrier(&h, raw) {
		t.Fatal("IsBarrier false")
	}
	// kmsg must parse it as a normal batch, as clients do.
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(raw); err != nil || rb.NumRecords != 1 {
		t.Fatalf("kmsg parse: %v", err)
	}
}

func TestEndTxnMarker(t *testing.T) {
	raw := EndTxnBatch(true, 42, 3, 7, 99)
	h, err := Validate(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !h.IsTransactional() || !h.IsControl() || h.ProducerID != 42 || h.ProducerEpoch != 3 {
		t.Fatalf("header %+v", h)
	}
	c, _ := ReadControl(raw)
	m, err := c.EndTxnMarker()
	if c.Type != ControlCommit || err != nil || m.CoordinatorEpoch != 7 {
		t.Fatalf("%+v %+v %v", c, m, err)
	}
	if IsBarrier(&h, raw) {
		t.Fatal("commit marker taken for a barrier")
	}
}

func TestValidateDetectsDamage(t *testing.T) {
	raw := BarrierBatch("x", 1)
	for i := attrOffset; i < len(raw); i++ {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x40
		if _, err := Validate(b); err == nil {
			t.Fatalf("flip at %d not detected", i)
		}
	}
	b := append([]byte(nil), raw...)
	SetBaseOffset(b, 77)
	SetPartitionLeaderEpoch(b, 5)
	h, err := Validate(b)
	if err != nil || h.BaseOffset != 77 || h.PartitionLeaderEpoch != 5 {
		t.Fatalf("rewrite broke batch: %v", err)
	}
	if _, err := Validate(raw[:len(raw)-1]); err == nil {
		t.Fatal("short batch accepted")
	}
	b[16] = 1
	if _, err := Validate(b); !errors.Is(err, ErrMagic) {
		t.Fatalf("magic: %v", err)
	}
}

func TestIncrementSequence(t *testing.T) {
	cases := []struct{ seq, inc, want int32 }{
		{0, 1, 1}, {5, 0, 5}, {2147483647, 1, 0}, {2147483646, 3, 1}, {2147483647, 0, 2147483647},
	}
	for _, c := range cases {
		if got := IncrementSequence(c.seq, c.inc); got != c.want {
			t.Errorf("IncrementSequence(%d,%d)=%d want %d", c.seq, c.inc, got, c.want)
		}
	}
}

func TestIter(t *testing.T) {
	a, b := BarrierBatch("a", 1), EndTxnBatch(false, 1, 1, 1, 1)
	buf := append(append(append([]byte(nil), a...), b...), b[:20]...)
	it := NewIter(buf)
	n := 0
	for _, _, ok := it.Next(); ok; _, _, ok = it.Next() {
		n++
	}
	if n != 2 || it.Err() != nil || it.Pos() != len(a)+len(b) {
		t.Fatalf("n=%d err=%v pos=%d", n, it.Err(), it.Pos())
	}
}

func FuzzReadControl(f *testing.F) {
	f.Add(BarrierBatch("abc", 1))
	f.Add(EndTxnBatch(true, 1, 1, 1, 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, err := ReadControl(b); err == nil {
			var v MirrorPidResetRecord
			_ = v.ReadFrom(c.Value)
			_, _ = c.EndTxnMarker()
		}
		_, _ = Validate(b)
		it := NewIter(b)
		for _, _, ok := it.Next(); ok; _, _, ok = it.Next() {
		}
	})
}

func FuzzMirrorPidResetRecord(f *testing.F) {
	v := MirrorPidResetRecord{SourceClusterID: "seed"}
	f.Add(v.AppendTo(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r MirrorPidResetRecord
		if r.ReadFrom(b) == nil {
			again := r.AppendTo(nil)
			var r2 MirrorPidResetRecord
			if err := r2.ReadFrom(again); err != nil || r2 != r {
				t.Fatalf("round trip %+v -> %+v %v", r, r2, err)
			}
		}
	})
}
