package coordinator

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/minibroker/minibroker/internal/vfs"
)

// BenchmarkEndTxnWithProduces: 8 transaction version 2 producers, each
// its own transactional id on its own __transaction_state partition (of
// 50), each transaction two Produces that add their partitions (each add
// fsynced) and an EndTxn; EndTxn's latency with the add's fsync waited
// for outside decideMu ("recheck", what runs) beside the same coordinator
// waiting for it under decideMu ("held", knobs.durableUnderDecideMu),
// in alternating rounds; p50 and p99 per round, medians of the rounds.
func BenchmarkEndTxnWithProduces(b *testing.B) {
	const parts, producers, perRound, rounds = 50, 8, 100, 5
	rules := []string{"held", "recheck"}
	txns := map[string]*Transactions{}
	for _, rule := range rules {
		dir := b.TempDir()
		pids, err := OpenProducerIDs(vfs.Default, dir)
		if err != nil {
			b.Fatal(err)
		}
		tx, err := OpenTransactions(TxnOptions{FS: vfs.Default, Dir: dir, Topic: openTxnTopicN(b, vfs.Default, dir, parts),
			Config: TxnConfig{MaxTimeoutMs: 60_000, IDExpirationMs: 3_600_000}, ProducerIDs: pids, Markers: &discardMarkers{},
			Offsets: &fakeOffsets{}, Registry: prometheus.NewRegistry(), Now: time.Now, RetryInterval: 5 * time.Millisecond,
			private: knobs{durableUnderDecideMu: rule == "held"}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { tx.Close() })
		txns[rule] = tx
	}
	ids := idsInDistinctPartitions("txn", producers, parts)
	state := map[string][]benchProducer{}
	for _, rule := range rules {
		state[rule] = initProducers(b, txns[rule], ids)
	}
	for range b.N {
		p50 := map[string][]time.Duration{}
		p99 := map[string][]time.Duration{}
		for range rounds {
			for _, rule := range rules {
				tx := txns[rule]
				var mu sync.Mutex
				var lat []time.Duration
				var wg sync.WaitGroup
				for i, id := range ids {
					wg.Go(func() {
						pr := &state[rule][i]
						for range perRound {
							for k := range int32(2) {
								release, err := tx.AddAndVerifyProduce(id, pr.pid, pr.epoch, TopicPartition{"data", k})
								release()
								if err != nil {
									b.Error(err)
									return
								}
							}
							start := time.Now()
							res, err := tx.EndTxnV2(id, pr.pid, pr.epoch, true, false)
							d := time.Since(start)
							if err != nil {
								b.Error(err)
								return
							}
							pr.pid, pr.epoch = res.ProducerID, res.ProducerEpoch
							mu.Lock()
							lat = append(lat, d)
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				slices.Sort(lat)
				p50[rule] = append(p50[rule], lat[len(lat)/2])
				p99[rule] = append(p99[rule], lat[len(lat)*99/100])
			}
		}
		for _, rule := range rules {
			b.ReportMetric(float64(medianOf(p50[rule]).Microseconds()), rule+"-endtxn-p50-µs")
			b.ReportMetric(float64(medianOf(p99[rule]).Microseconds()), rule+"-endtxn-p99-µs")
		}
		b.Logf("EndTxn p99 per round: held %v, recheck %v", p99["held"], p99["recheck"])
	}
}

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// discardMarkers writes no markers (Markers for benchmarks).
type discardMarkers struct{}

func (discardMarkers) WriteTxnMarker(TopicPartition, int64, int16, bool, int32) error { return nil }

// benchProducer is a producer id and epoch InitProducerID gave.
type benchProducer struct {
	pid   int64
	epoch int16
}

// initProducers gives each transactional id of ids its producer id.
func initProducers(b *testing.B, tx *Transactions, ids []string) []benchProducer {
	var ps []benchProducer
	for _, id := range ids {
		res, err := tx.InitProducerID(id, 60_000, -1, -1)
		if err != nil {
			b.Fatal(err)
		}
		ps = append(ps, benchProducer{res.ProducerID, res.ProducerEpoch})
	}
	return ps
}
