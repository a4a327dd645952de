package psm

// The producer-id collisions a mirror's failover causes without the
// barrier (docs/MIRRORING.md), fed to a Manager the way a mirror feeds a partition: producer P(A) with
// producer id 5 from cluster A, then an unrelated producer P(B) of cluster
// B that was also given id 5, both with origin REPLICATION (or, in the
// failover case, a new local CLIENT producer). Each scenario runs twice:
// without a barrier between A's and B's records it shows the corruption
// (B's batches judged against A's state: refused or swallowed as
// duplicates; the negative control), with a MIRROR_PID_RESET barrier
// between them it shows each producer judged on its own.

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

const collidingPID = 5

type seedRig struct {
	t    *testing.T
	reg  *prometheus.Registry
	logs *observer.ObservedLogs
	m    *Manager
}

func newSeedRig(t *testing.T) *seedRig {
	core, logs := observer.New(zapcore.WarnLevel)
	reg := prometheus.NewRegistry()
	return &seedRig{t: t, reg: reg, logs: logs, m: NewManager(Config{}, zap.New(core), NewMetrics(reg))}
}

func (r *seedRig) anomalies(kind string) float64 {
	return counterValue(r.t, r.reg, "minibroker_psm_replication_anomalies_total", kind)
}

func (r *seedRig) totalAnomalies() float64 {
	total := 0.0
	for _, k := range []string{AnomalyEpochRegression, AnomalySequenceGap, AnomalyNewEpochSequence,
		AnomalyCoordinatorEpoch, AnomalyMarkerWithoutTxn, AnomalyNonTxnDuringTxn} {
		total += r.anomalies(k)
	}
	return total
}

// maybeBarrier appends the barrier at offset when withBarrier, else an
// unrelated non-idempotent batch, so both runs have the same offsets.
func (r *seedRig) maybeBarrier(withBarrier bool, origin Origin, offset int64) {
	if withBarrier {
		apply(r.t, r.m, origin, barrier(offset))
	} else {
		apply(r.t, r.m, origin, dataBatch(-1, -1, -1, 1, offset, false))
	}
}

// Seed scenario 1: same epoch, wrong sequence. Kafka accepts it silently
// (REPLICATION is not validated) and the entry is updated with whatever
// arrives last.
func TestSeedSameEpochWrongSequence(t *testing.T) {
	for _, withBarrier := range []bool{false, true} {
		t.Run(barrierName(withBarrier), func(t *testing.T) {
			r := newSeedRig(t)
			apply(t, r.m, OriginReplication, dataBatch(collidingPID, 0, 0, 10, 0, false)) // P(A): seq 0-9
			r.maybeBarrier(withBarrier, OriginReplication, 10)
			_, err := r.m.Prepare(OriginReplication, []PreparedBatch{dataBatch(collidingPID, 0, 0, 5, 11, false)}, testTS) // P(B): seq 0-4
			if err != nil {
				t.Fatalf("replication must never be refused: %v", err)
			}
			apply(t, r.m, OriginReplication, dataBatch(collidingPID, 0, 0, 5, 11, false))
			e, _ := r.m.Entry(collidingPID)
			if !withBarrier {
				// Corruption: one entry mixes both producers' batches, and
				// a Kafka broker would have said nothing. minibroker counts it.
				if len(e.Batches) != 2 || e.Batches[0].LastSeq != 9 || e.Batches[1].LastSeq != 4 {
					t.Fatalf("expected A's and B's batches mixed in one entry, got %+v", e.Batches)
				}
				if r.anomalies(AnomalySequenceGap) != 1 || r.logs.Len() != 1 {
					t.Fatalf("the collision must be counted and logged: %v anomalies, %d logs",
						r.anomalies(AnomalySequenceGap), r.logs.Len())
				}
				return
			}
			if len(e.Batches) != 1 || e.Batches[0] != (BatchMeta{FirstSeq: 0, LastSeq: 4, FirstOffset: 11, LastOffset: 15, Timestamp: testTS}) {
				t.Fatalf("P(B) must be on its own, got %+v", e.Batches)
			}
			if r.totalAnomalies() != 0 {
				t.Fatalf("no anomaly expected, got %v", r.totalAnomalies())
			}
		})
	}
}

// Seed scenario 2: different epochs. The lower epoch is accepted with only
// a warning (Kafka logs it on a follower), and both producers then coexist
// under one id, each "fencing" the other back and forth.
func TestSeedLowerEpochOnlyWarned(t *testing.T) {
	for _, withBarrier := range []bool{false, true} {
		t.Run(barrierName(withBarrier), func(t *testing.T) {
			r := newSeedRig(t)
			apply(t, r.m, OriginReplication, dataBatch(collidingPID, 3, 0, 10, 0, false)) // P(A): epoch 3
			r.maybeBarrier(withBarrier, OriginReplication, 10)
			apply(t, r.m, OriginReplication, dataBatch(collidingPID, 1, 0, 5, 11, false)) // P(B): epoch 1
			e, _ := r.m.Entry(collidingPID)
			if e.Epoch != 1 || len(e.Batches) != 1 {
				t.Fatalf("entry must follow P(B) (epoch 1), got %+v", e)
			}
			if !withBarrier {
				warned := r.logs.FilterField(zap.String("kind", AnomalyEpochRegression)).Len()
				if r.anomalies(AnomalyEpochRegression) != 1 || warned != 1 {
					t.Fatalf("lower epoch must be warned and counted: %v, %d", r.anomalies(AnomalyEpochRegression), warned)
				}
				// P(A) goes on at epoch 3: accepted again, the id now
				// flips between two producers.
				apply(t, r.m, OriginReplication, dataBatch(collidingPID, 3, 10, 5, 16, false))
				if e, _ := r.m.Entry(collidingPID); e.Epoch != 3 || r.anomalies(AnomalyNewEpochSequence) != 1 {
					t.Fatalf("P(A) resumed: %+v, %v", e, r.anomalies(AnomalyNewEpochSequence))
				}
				return
			}
			if r.totalAnomalies() != 0 || r.logs.Len() != 0 {
				t.Fatalf("no anomaly or warning expected: %v, %v", r.totalAnomalies(), r.logs.All())
			}
		})
	}
}

// Seed scenario 3: transactional interleaving. P(A)'s transaction is open
// when P(B)'s transactional records and marker arrive: B's ABORT closes
// the transaction that began with A's records, so A's records are reported
// aborted (a read_committed consumer drops them), and A's own COMMIT later
// completes nothing.
//
// (In the broker, STOPPING truncates to the LSO before writing the barrier,
// so A's undecided records are not even in the log. They are kept here to
// show that B's marker no longer reaches them.)
func TestSeedMarkerClosesOtherProducersTxn(t *testing.T) {
	for _, withBarrier := range []bool{false, true} {
		t.Run(barrierName(withBarrier), func(t *testing.T) {
			r := newSeedRig(t)
			apply(t, r.m, OriginReplication, dataBatch(collidingPID, 0, 0, 2, 0, true)) // P(A) txn: 0-1
			r.maybeBarrier(withBarrier, OriginReplication, 2)
			apply(t, r.m, OriginReplication, dataBatch(collidingPID, 0, 0, 2, 3, true)) // P(B) txn: 3-4
			completed := apply(t, r.m, OriginReplication, marker(false, collidingPID, 0, 0, 5))
			if len(completed) != 1 || !completed[0].Aborted {
				t.Fatalf("B's abort must complete one transaction: %+v", completed)
			}
			if !withBarrier {
				if completed[0].FirstOffset != 0 {
					t.Fatalf("negative control: expected B's ABORT to cover A's records from 0, got %+v", completed[0])
				}
				// A's COMMIT finds nothing to commit.
				if c := apply(t, r.m, OriginReplication, marker(true, collidingPID, 0, 0, 6)); len(c) != 0 {
					t.Fatalf("A's commit completed %+v", c)
				}
				if r.anomalies(AnomalyMarkerWithoutTxn) != 1 || r.anomalies(AnomalySequenceGap) != 1 {
					t.Fatalf("the collision must be counted: marker %v, gap %v",
						r.anomalies(AnomalyMarkerWithoutTxn), r.anomalies(AnomalySequenceGap))
				}
				return
			}
			if completed[0].FirstOffset != 3 || completed[0].LastOffset != 5 {
				t.Fatalf("B's abort must cover only B's records 3-5, got %+v", completed[0])
			}
			if _, ok := r.m.FirstUnstableOffset(); ok {
				t.Fatal("no transaction may stay open")
			}
			if r.totalAnomalies() != 0 {
				t.Fatalf("no anomaly expected, got %v", r.totalAnomalies())
			}
		})
	}
}

// Seed scenario 4, the failover: the partition stops mirroring and becomes
// writable; a new local producer is given the colliding id 5 at epoch 0
// and sends sequences 0..N. Without the barrier its batches match the
// mirrored P(A)'s retained batches and are answered as duplicates: the
// client is told they were written (at A's offsets) and its records are
// silently dropped. With the barrier (written by the partition, origin
// COORDINATOR) they are appended.
func TestSeedFailoverDuplicateSwallowsRecords(t *testing.T) {
	for _, withBarrier := range []bool{false, true} {
		t.Run(barrierName(withBarrier), func(t *testing.T) {
			r := newSeedRig(t)
			for i := int64(0); i < 4; i++ { // P(A): seq 0-4, 5-9, 10-14, 15-19
				apply(t, r.m, OriginReplication, dataBatch(collidingPID, 0, int32(i*5), 5, i*5, false))
			}
			r.maybeBarrier(withBarrier, OriginCoordinator, 20)
			next := int64(21)
			for i := int32(0); i < 4; i++ { // local producer: seq 0-4, 5-9, …
				p, err := r.m.Prepare(OriginClient, []PreparedBatch{dataBatch(collidingPID, 0, i*5, 5, next, false)}, testTS)
				var dup *DuplicateError
				if !withBarrier {
					if !errors.As(err, &dup) || dup.FirstOffset != int64(i)*5 {
						t.Fatalf("negative control: batch %d expected as a duplicate of A's, got %v", i, err)
					}
					continue // nothing written: the client's records are lost
				}
				if err != nil {
					t.Fatalf("batch %d refused: %v", i, err)
				}
				p.Apply()
				next += 5
			}
			dups := counterValue(t, r.reg, "minibroker_psm_duplicates_total", "")
			e, _ := r.m.Entry(collidingPID)
			if !withBarrier {
				if r.m.LastOffset() != 21 || dups != 4 {
					t.Fatalf("expected 4 swallowed batches and nothing appended: end %d, dups %v", r.m.LastOffset(), dups)
				}
				return
			}
			if r.m.LastOffset() != 41 || dups != 0 || len(e.Batches) != 4 || e.Batches[0].FirstOffset != 21 {
				t.Fatalf("local producer must be appended on its own: end %d, dups %v, %+v", r.m.LastOffset(), dups, e)
			}
		})
	}
}

func barrierName(withBarrier bool) string {
	if withBarrier {
		return "with_barrier"
	}
	return "without_barrier_negative_control"
}
