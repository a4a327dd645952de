package mirror_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestSourceEpochRiseFencesFetch (KIP-1279's leader-epoch
// invariant): the source partition's leader epoch rises with no record
// while the mirror fetches, caught up. The mirror's fetches carry the
// epoch the fetcher read (CurrentLeaderEpoch), so the source fences the
// next one (FENCED_LEADER_EPOCH), the fetcher reads the metadata again and
// the local partition's leader epoch reaches the source's without a new
// batch, a metadata refresh or a group sync (the refresh is an hour here,
// and no group sync runs); records produced after are mirrored.
// Negative control (SetNoFetchEpoch: CurrentLeaderEpoch -1, no fencing):
// no fetch is fenced and the local epoch stays below the source's for as
// long as the test looks (3 s), while records still flow.
func TestSourceEpochRiseFencesFetch(t *testing.T) {
	for _, sendEpoch := range []bool{true, false} {
		t.Run(fmt.Sprintf("sendEpoch=%v", sendEpoch), func(t *testing.T) {
			src := minibrokertest.Start(t, minibrokertest.Topic("ledger", 1))
			produce(t, src.Addr(), "ledger", 5)
			m, l := openMirror(t, src, mirror.Options{MetadataInterval: time.Hour, FetchMaxWait: 50 * time.Millisecond},
				func(m *mirror.Manager) {
					if !sendEpoch {
						mirror.SetNoFetchEpoch(m)
					}
				}, 5, "ledger")
			t.Cleanup(m.Close)
			sp, ok := src.Broker().Partition("ledger", 0)
			if !ok {
				t.Fatal("no source partition")
			}
			dp := l.Partitions("ledger")[0]
			before := sp.LeaderEpoch()
			if dp.LeaderEpoch() < before {
				t.Fatalf("local epoch %d below the source's %d before the rise", dp.LeaderEpoch(), before)
			}
			sp.RaiseLeaderEpoch(before + 3) // a leader election, no record
			want := before + 3
			wait := 20 * time.Second
			if !sendEpoch {
				wait = 3 * time.Second
			}
			deadline := time.Now().Add(wait)
			for dp.LeaderEpoch() < want && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			fences := mirror.EpochFences(m, "m", "ledger", 0)
			switch {
			case sendEpoch && (dp.LeaderEpoch() < want || fences < 1):
				t.Fatalf("local epoch %d after %v, source's %d (fenced fetches: %d)", dp.LeaderEpoch(), wait, want, fences)
			case !sendEpoch && (dp.LeaderEpoch() >= want || fences != 0):
				t.Fatalf("negative control: local epoch %d reached the source's %d (fenced fetches: %d)", dp.LeaderEpoch(), want, fences)
			}
			produce(t, src.Addr(), "ledger", 3)
			waitEnd(t, l, "ledger", 8)
			st, err := m.Describe("m")
			if err != nil || len(st.Partitions) != 1 || st.Partitions[0].State != mirror.Mirroring {
				t.Fatalf("describe: %+v %v", st.Partitions, err)
			}
		})
	}
}

// TestSourceEpochRiseSeenByRefresh: a paused partition fetches nothing,
// so no fetch is fenced; the mirror's metadata refresh (every 100 ms
// here) raises its leader epoch to the source's, with no group sync.
func TestSourceEpochRiseSeenByRefresh(t *testing.T) {
	src := minibrokertest.Start(t, minibrokertest.Topic("ledger", 1))
	produce(t, src.Addr(), "ledger", 2)
	m, l := openMirror(t, src, mirror.Options{MetadataInterval: 100 * time.Millisecond}, nil, 2, "ledger")
	t.Cleanup(m.Close)
	if err := m.Pause("m", []string{"ledger"}); err != nil {
		t.Fatal(err)
	}
	sp, _ := src.Broker().Partition("ledger", 0)
	dp := l.Partitions("ledger")[0]
	want := sp.LeaderEpoch() + 2
	sp.RaiseLeaderEpoch(want)
	for deadline := time.Now().Add(20 * time.Second); dp.LeaderEpoch() < want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("paused partition's epoch %d, source's %d", dp.LeaderEpoch(), want)
		}
	}
	if f := mirror.EpochFences(m, "m", "ledger", 0); f > 0 {
		t.Fatalf("a paused partition's fetch was fenced %d times", f)
	}
}
