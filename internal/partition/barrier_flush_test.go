package partition

import "testing"

// TestBarrierFlushToSurvivesPowerLoss: STOPPING makes its barrier durable
// with FlushTo (the data's fsync, not a full flush: no index, leader-epoch
// checkpoint or recovery point). After a power loss the barrier is still
// at its offset, its leader epoch is rebuilt from the batch, and it still
// clears the mirrored producer's state, so a colliding local producer is
// not judged against it. The negative control leaves FlushTo out: the
// power loss takes the barrier (and the never-flushed mirrored records).
func TestBarrierFlushToSurvivesPowerLoss(t *testing.T) {
	for _, flush := range []bool{true, false} {
		mem, p := openMem(t)
		if _, err := p.AppendAsMirror(at(encode(5, 0, 0, 2, false), 0, 3)); err != nil {
			t.Fatal(err)
		}
		off, err := p.WriteBarrier("cluster-A")
		if err != nil || off != 2 {
			t.Fatalf("barrier: %d %v", off, err)
		}
		if flush {
			if err := p.FlushTo(off + 1); err != nil {
				t.Fatal(err)
			}
		}
		crashed := mem.CrashClone()
		p.Abandon()

		p = openOn(t, crashed, memDir)
		ok, err := p.BarrierAt(2)
		if err != nil {
			t.Fatal(err)
		}
		if !flush {
			if ok || p.Offsets().LogEnd != 0 {
				t.Fatalf("without FlushTo: barrier %v, log end %d after the power loss; want both lost", ok, p.Offsets().LogEnd)
			}
			p.Close()
			continue
		}
		if !ok || p.Offsets().LogEnd != 3 {
			t.Fatalf("after the power loss: barrier at 2 %v, log end %d; want the barrier and end 3", ok, p.Offsets().LogEnd)
		}
		if e, _ := p.LatestEpoch(); e != 4 {
			t.Fatalf("latest epoch %d after recovery, want the barrier's 4", e)
		}
		if p.psm.Len() != 0 {
			t.Fatalf("%d producer entries after recovery past the barrier", p.psm.Len())
		}
		res, err := p.AppendAsLeader(encode(5, 0, 0, 2, false))
		if err != nil || res.Duplicate || res.BaseOffset != 3 {
			t.Fatalf("colliding producer after the recovered barrier: %+v %v", res, err)
		}
		p.Close()
	}
}
