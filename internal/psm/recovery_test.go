package psm

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/minibroker/minibroker/internal/vfs"
)

// workload is a log written by live appends, and the PSM state after each.
type workload struct {
	appends [][]PreparedBatch // as written, offsets assigned
	states  map[int64]recoveryState
	end     int64
	// what the log holds, so tests can tell they covered it
	barriers, markers, duplicates, txnBatches int
}

type recoveryState struct {
	Entries []Entry
	Ongoing []TxnInfo
}

func stateOf(m *Manager) recoveryState {
	return recoveryState{Entries: m.Entries(), Ongoing: m.OngoingTxns()}
}

// genWorkload drives a live manager with idempotent and transactional
// producers (and retries, fencing, markers, plain batches and, when
// barriers is set, MIRROR_PID_RESET barriers), writing snapshots at
// snapshotEvery appends into dir.
func genWorkload(t *testing.T, seed uint64, n int, barriers bool, dir string, snapshotEvery int) *workload {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	type producer struct {
		epoch   int16
		nextSeq int32
		txnOpen bool
		last    PreparedBatch
	}
	prods := map[int64]*producer{}
	for pid := int64(1); pid <= 4; pid++ {
		prods[pid] = &producer{}
	}
	m := NewManager(Config{}, nil, nil)
	w := &workload{states: map[int64]recoveryState{0: stateOf(m)}}
	for i := 0; i < n; i++ {
		pid := int64(1 + rng.IntN(4))
		pr := prods[pid]
		var bs []PreparedBatch
		origin := OriginClient
		switch r := rng.IntN(20); {
		case r == 0 && barriers:
			// No transaction may be open at a barrier (STOPPING truncates
			// to the LSO first): abort them, then the barrier, in one append.
			origin = OriginCoordinator
			for id := int64(1); id <= 4; id++ {
				if prods[id].txnOpen {
					bs = append(bs, marker(false, id, prods[id].epoch, 0, w.end+int64(len(bs))))
					prods[id].txnOpen = false
				}
			}
			bs = append(bs, barrier(w.end+int64(len(bs))))
		case r <= 2 && pr.txnOpen:
			origin, bs = OriginCoordinator, []PreparedBatch{marker(rng.IntN(2) == 0, pid, pr.epoch, 0, w.end)}
			pr.txnOpen = false
		case r == 3 && !pr.txnOpen:
			pr.epoch++ // fenced and restarted: nothing of the old epoch is retried
			pr.nextSeq = 0
			pr.last = PreparedBatch{}
			continue
		case r == 4 && pr.last.Header.ProducerID != 0:
			retry := pr.last // a retry: a duplicate, unless a barrier came between
			retry.Header.BaseOffset = w.end
			bs = []PreparedBatch{retry}
		case r == 5:
			bs = []PreparedBatch{dataBatch(-1, -1, -1, 2, w.end, false)}
		default:
			count := int32(1 + rng.IntN(3))
			txn := pr.txnOpen || rng.IntN(4) == 0
			b := dataBatch(pid, pr.epoch, pr.nextSeq, count, w.end, txn)
			b.Header.MaxTimestamp = testTS + int64(i)
			bs = []PreparedBatch{b}
			if rng.IntN(3) == 0 { // a second batch of the same request
				b2 := dataBatch(pid, pr.epoch, pr.nextSeq+count, 1, w.end+int64(count), txn)
				bs = append(bs, b2)
			}
		}
		p, err := m.Prepare(origin, bs, testTS)
		if _, dup := err.(*DuplicateError); dup {
			w.duplicates++
			continue
		}
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		p.Apply()
		for _, b := range bs {
			switch {
			case b.Header.IsControl() && b.Header.ProducerID < 0:
				w.barriers++
			case b.Header.IsControl():
				w.markers++
			case b.Header.IsTransactional():
				w.txnBatches++
			}
			if b.Header.ProducerID == pid && !b.Header.IsControl() {
				pr.nextSeq = b.Header.LastSequence() + 1
				pr.txnOpen = b.Header.IsTransactional()
				pr.last = b
			}
		}
		w.appends = append(w.appends, bs)
		w.end = bs[len(bs)-1].Header.LastOffset() + 1
		w.states[w.end] = stateOf(m)
		if dir != "" && len(w.appends)%snapshotEvery == 0 {
			if err := m.WriteSnapshot(vfs.Default, dir, w.end); err != nil {
				t.Fatal(err)
			}
		}
	}
	return w
}

// recover is what the partition does: load the newest snapshot at or
// below upTo and replay the log from it up to upTo with REPLICATION, one
// batch at a time.
func (w *workload) recover(t *testing.T, dir string, upTo int64, reg *prometheus.Registry) *Manager {
	t.Helper()
	m, snapOff, err := LoadLatestSnapshot(vfs.Default, dir, upTo, Config{}, nil, NewMetrics(reg))
	if err != nil {
		t.Fatal(err)
	}
	for _, bs := range w.appends {
		for _, b := range bs {
			if b.Header.BaseOffset < snapOff || b.Header.BaseOffset >= upTo {
				continue
			}
			apply(t, m, OriginReplication, b)
		}
	}
	m.SetLastOffset(upTo)
	return m
}

func TestRecoveryMatchesLiveAppends(t *testing.T) {
	for _, tc := range []struct {
		name     string
		barriers bool
		damage   func(t *testing.T, dir string)
	}{
		{"snapshots", false, nil},
		{"snapshots_barriers", true, nil},
		{"no_snapshot", false, removeAll},
		{"no_snapshot_barriers", true, removeAll},
		{"corrupt_latest", false, corruptLatest},
		{"corrupt_latest_barriers", true, corruptLatest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 8; seed++ {
				dir := t.TempDir()
				w := genWorkload(t, seed, 300, tc.barriers, dir, 37)
				if w.duplicates == 0 || w.markers == 0 || w.txnBatches == 0 || (tc.barriers && w.barriers == 0) {
					t.Fatalf("seed %d: workload too thin: %d barriers, %d markers, %d duplicates, %d txn batches",
						seed, w.barriers, w.markers, w.duplicates, w.txnBatches)
				}
				if tc.damage != nil {
					tc.damage(t, dir)
				}
				reg := prometheus.NewRegistry()
				got := w.recover(t, dir, w.end, reg)
				if want := w.states[w.end]; !reflect.DeepEqual(stateOf(got), want) {
					t.Fatalf("seed %d: recovered state differs\n got %+v\nwant %+v", seed, stateOf(got), want)
				}
				// A valid log replays without a single anomaly.
				for _, k := range []string{AnomalyEpochRegression, AnomalySequenceGap, AnomalyNewEpochSequence,
					AnomalyCoordinatorEpoch, AnomalyMarkerWithoutTxn, AnomalyNonTxnDuringTxn} {
					if v := counterValue(t, reg, "minibroker_psm_replication_anomalies_total", k); v != 0 {
						t.Fatalf("seed %d: %v %s anomalies replaying a valid log", seed, v, k)
					}
				}
			}
		})
	}
}

// Truncation: rebuilding at any earlier append boundary (snapshot at or
// below it plus replay) gives the state the live manager had there.
func TestTruncationRebuild(t *testing.T) {
	dir := t.TempDir()
	w := genWorkload(t, 42, 200, true, dir, 25)
	checked := 0
	for off, want := range w.states {
		if off%3 != 0 {
			continue
		}
		got := w.recover(t, dir, off, prometheus.NewRegistry())
		if !reflect.DeepEqual(stateOf(got), want) {
			t.Fatalf("truncated to %d: got %+v\nwant %+v", off, stateOf(got), want)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("only %d truncation points", checked)
	}
}

func removeAll(t *testing.T, dir string) {
	offs, _ := SnapshotOffsets(vfs.Default, dir)
	if len(offs) == 0 {
		t.Fatal("workload wrote no snapshots")
	}
	if err := DeleteSnapshotsBefore(vfs.Default, dir, offs[len(offs)-1]+1); err != nil {
		t.Fatal(err)
	}
}

func corruptLatest(t *testing.T, dir string) {
	offs, _ := SnapshotOffsets(vfs.Default, dir)
	if len(offs) < 2 {
		t.Fatal("workload wrote fewer than two snapshots")
	}
	path := filepath.Join(dir, SnapshotFileName(offs[len(offs)-1]))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
