package logtool

import (
	"fmt"
	"strings"
	"testing"
)

func verifyLog(t *testing.T, l *logBuilder, opts VerifyOptions) *Verifier {
	t.Helper()
	dir := t.TempDir()
	l.write(t, dir)
	parts, err := GroupPaths([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	v, err := VerifyPartition(parts[0], opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// kinds renders findings as "kind@offset" for comparison.
func kinds(v *Verifier) string {
	var s []string
	for _, f := range v.Findings {
		s = append(s, fmt.Sprintf("%s@%d", f.Kind.Name, f.Offset))
	}
	return strings.Join(s, " ")
}

const collidingPID = 5

// The producer-id collision scenarios of internal/psm/seed_test.go, written
// as logs: P(A) with producer id 5 from cluster A, then an unrelated P(B)
// of cluster B that also got id 5. Without a barrier between them
// verify-log must find the collision; with one it must stay silent.
func TestVerifySeedScenarios(t *testing.T) {
	sep := func(withBarrier bool) []byte {
		if withBarrier {
			return barrier()
		}
		return plain()
	}
	scenarios := []struct {
		name  string
		build func(l *logBuilder, withBarrier bool)
		want  string // findings without the barrier
	}{
		{"same epoch, wrong sequence", func(l *logBuilder, wb bool) {
			l.add(dataBatch(spec{pid: collidingPID, seq: 0, n: 10})) // P(A): 0-9
			l.add(sep(wb))                                           // 10
			l.add(dataBatch(spec{pid: collidingPID, seq: 0, n: 5}))  // P(B): 11-15
		}, "sequence_restart@11"},
		{"different epochs", func(l *logBuilder, wb bool) {
			l.add(dataBatch(spec{pid: collidingPID, epoch: 3, seq: 0, n: 10})) // P(A) epoch 3
			l.add(sep(wb))
			l.add(dataBatch(spec{pid: collidingPID, epoch: 1, seq: 0, n: 5})) // P(B) epoch 1
		}, "epoch_regression@11"},
		{"transactional interleaving", func(l *logBuilder, wb bool) {
			l.add(dataBatch(spec{pid: collidingPID, seq: 0, n: 2, txn: true})) // P(A) txn 0-1
			l.add(sep(wb))                                                     // 2
			l.add(dataBatch(spec{pid: collidingPID, seq: 0, n: 2, txn: true})) // P(B) txn 3-4
			l.add(marker(false, collidingPID, 0, 0))                           // B's ABORT at 5
		}, "sequence_restart@3"},
		{"failover: local producer after the mirrored one", func(l *logBuilder, wb bool) {
			for i := int32(0); i < 4; i++ {
				l.add(dataBatch(spec{pid: collidingPID, seq: i * 5, n: 5}))
			}
			l.add(sep(wb)) // 20
			if wb {        // without the barrier the broker swallows these as duplicates: they never reach the log
				for i := int32(0); i < 4; i++ {
					l.add(dataBatch(spec{pid: collidingPID, seq: i * 5, n: 5}))
				}
			}
		}, ""},
	}
	for _, sc := range scenarios {
		for _, wb := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/barrier=%v", sc.name, wb), func(t *testing.T) {
				var l logBuilder
				sc.build(&l, wb)
				v := verifyLog(t, &l, VerifyOptions{ProducerIDExpirationMs: 86_400_000})
				want := sc.want
				if wb {
					want = ""
					if v.Barriers != 1 {
						t.Fatalf("barriers %d", v.Barriers)
					}
				}
				if got := kinds(v); got != want {
					t.Fatalf("findings %q, want %q", got, want)
				}
			})
		}
	}
}

// The third scenario continued: A's own COMMIT arrives after B's ABORT
// closed the transaction A opened.
func TestVerifyMarkerOfOtherProducer(t *testing.T) {
	var l logBuilder
	l.add(dataBatch(spec{pid: collidingPID, seq: 0, n: 2, txn: true})) // A: 0-1
	l.add(dataBatch(spec{pid: collidingPID, seq: 2, n: 2, txn: true})) // B, following by chance: 2-3
	l.add(marker(false, collidingPID, 0, 0))                           // B's ABORT: 4
	l.add(marker(true, collidingPID, 0, 0))                            // A's COMMIT: 5
	if got := kinds(verifyLog(t, &l, VerifyOptions{})); got != "marker_without_txn@5" {
		t.Fatalf("findings %q", got)
	}
}

func TestVerifyHistories(t *testing.T) {
	cases := []struct {
		name  string
		build func(l *logBuilder)
		opts  VerifyOptions
		want  string
	}{
		{"clean idempotent and transactional producers", func(l *logBuilder) {
			l.add(dataBatch(spec{pid: 1, seq: 0, n: 3}))
			l.add(dataBatch(spec{pid: 2, seq: 0, n: 2, txn: true}))
			l.add(dataBatch(spec{pid: 1, seq: 3, n: 3}))
			l.add(marker(true, 2, 0, 4))
			l.add(dataBatch(spec{pid: 2, epoch: 1, seq: 0, n: 1, txn: true})) // new epoch from 0
			l.add(marker(false, 2, 2, 4))                                     // timeout abort at a bumped epoch
			l.add(dataBatch(spec{pid: 1, seq: 6, n: 1}))
		}, VerifyOptions{}, ""},
		{"sequence gap", func(l *logBuilder) {
			l.add(dataBatch(spec{pid: 1, seq: 0, n: 3}))
			l.add(dataBatch(spec{pid: 1, seq: 7, n: 1}))
		}, VerifyOptions{}, "sequence_gap@3"},
		{"sequence gap after the expiration: the broker forgot the producer", func(l *logBuilder) {
			l.add(dataBatch(spec{pid: 1, seq: 0, n: 3}))
			l.add(dataBatch(spec{pid: 1, seq: 0, n: 1, ts: testTS + 1000}))
		}, VerifyOptions{ProducerIDExpirationMs: 1000}, ""},
		{"restart just before the expiration", func(l *logBuilder) {
			l.add(dataBatch(spec{pid: 1, seq: 0, n: 3}))
			l.add(dataBatch(spec{pid: 1, seq: 0, n: 1, ts: testTS + 999}))
		}, VerifyOptions{ProducerIDExpirationMs: 1000}, "sequence_restart@3"},
		{"sequence wraps at MaxInt32", func(l *logBuilder) {
			l.add(dataBatch(spec{pid: 1, seq: 1<<31 - 2, n: 2}))
			l.add(dataBatch(spec{pid: 1, seq: 0, n: 1}))
		}, VerifyOptions{}, ""},
		{"new epoch not at 0", func(l *logBuilder) {
			l.add(dataBatch(spec{pid: 1, seq: 0, n: 3}))
			l.add(dataBatch(spec{pid: 1, epoch: 1, seq: 3, n: 1}))
		}, VerifyOptions{}, "new_epoch_sequence@3"},
		{"transactional and idempotent data under one id", func(l *logBuilder) {
			l.add(dataBatch(spec{pid: 1, seq: 0, n: 1}))
			l.add(dataBatch(spec{pid: 1, epoch: 1, seq: 0, n: 1, txn: true}))
		}, VerifyOptions{}, "transactional_mix@1"},
		{"non-transactional batch inside a transaction", func(l *logBuilder) {
			l.add(dataBatch(spec{pid: 1, seq: 0, n: 1, txn: true}))
			l.add(dataBatch(spec{pid: 1, seq: 1, n: 1}))
		}, VerifyOptions{}, "nontxn_during_txn@1"},
		{"marker for an idempotent producer id", func(l *logBuilder) {
			l.add(dataBatch(spec{pid: 1, seq: 0, n: 1}))
			l.add(marker(true, 1, 0, 0))
		}, VerifyOptions{}, "transactional_mix@1"},
		{"marker epoch goes back", func(l *logBuilder) {
			l.add(dataBatch(spec{pid: 1, epoch: 2, seq: 0, n: 1, txn: true}))
			l.add(marker(true, 1, 1, 0))
		}, VerifyOptions{}, "epoch_regression@1"},
		{"coordinator epoch goes back", func(l *logBuilder) {
			l.add(dataBatch(spec{pid: 1, seq: 0, n: 1, txn: true}))
			l.add(marker(true, 1, 0, 5))
			l.add(dataBatch(spec{pid: 1, seq: 1, n: 1, txn: true}))
			l.add(marker(true, 1, 0, 4))
		}, VerifyOptions{}, "coordinator_epoch_regression@3"},
		{"marker for a producer never seen", func(l *logBuilder) {
			l.add(marker(true, 9, 0, 0))
		}, VerifyOptions{}, "marker_without_txn@0"},
		{"barrier resets every producer", func(l *logBuilder) {
			l.add(dataBatch(spec{pid: 1, epoch: 4, seq: 0, n: 3, txn: true})) // left open: STOPPING truncates such, but be robust
			l.add(dataBatch(spec{pid: 2, seq: 0, n: 3}))
			l.add(barrier())
			l.add(dataBatch(spec{pid: 1, seq: 0, n: 1}))
			l.add(dataBatch(spec{pid: 2, epoch: 0, seq: 0, n: 1}))
		}, VerifyOptions{}, ""},
		{"barrier in a transactional batch is no barrier", func(l *logBuilder) {
			l.add(dataBatch(spec{pid: 2, seq: 0, n: 3}))
			tb := barrier()
			tb[22] |= 0x10 // transactional bit (attributes low byte)
			fixCRC(tb)
			l.add(tb)
			l.add(dataBatch(spec{pid: 2, seq: 0, n: 1}))
		}, VerifyOptions{}, "transactional_barrier@3 sequence_restart@4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l logBuilder
			c.build(&l)
			if got := kinds(verifyLog(t, &l, c.opts)); got != c.want {
				t.Fatalf("findings %q, want %q", got, c.want)
			}
		})
	}
}

func TestVerifyDamage(t *testing.T) {
	var l logBuilder
	l.add(dataBatch(spec{pid: 1, seq: 0, n: 1}))
	l.add(dataBatch(spec{pid: 1, seq: 1, n: 1}))
	bad := len(l.data) - 3
	l.data[bad] ^= 0xff // corrupt the second batch's records
	full := append([]byte(nil), l.data...)
	l.add(dataBatch(spec{pid: 1, seq: 2, n: 1}))
	v := verifyLog(t, &l, VerifyOptions{})
	if got := kinds(v); got != "corrupt_batch@1" {
		t.Fatalf("findings %q", got)
	}
	// A torn tail at the end of the last segment is a note, not a finding.
	l.data = append(full, l.data[len(full):len(full)+20]...)
	v = verifyLog(t, &l, VerifyOptions{})
	if got := kinds(v); got != "corrupt_batch@1" || v.TornTail == nil {
		t.Fatalf("findings %q, torn tail %v", got, v.TornTail)
	}
}
