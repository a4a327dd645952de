package coordinator

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/minibroker/minibroker/internal/vfs"
)

// BenchmarkEndTxnWithOffsetCommits: 4 producers each commit transactions
// of one explicitly added partition (AddPartitionsToTxn, then EndTxn),
// while 4 other producers run transaction version 2 offset commits
// (TxnOffsetCommit v5, its group's add fsynced in __transaction_state and
// its offsets in __consumer_offsets by a real group coordinator, then
// EndTxn v5); every id on its own __transaction_state partition (of 50),
// every group on its own __consumer_offsets partition (of 8). Reported:
// the first producers' EndTxn latency with TxnOffsetCommit's fsyncs
// waited for outside decideMu ("recheck", what runs) beside the same
// coordinators waiting for them under decideMu ("held",
// knobs.durableUnderDecideMu), in alternating rounds; p50 and p99 per
// round, medians of the rounds.
func BenchmarkEndTxnWithOffsetCommits(b *testing.B) {
	const txnParts, offsetsParts, enders, committers, perRound, rounds = 50, 8, 4, 4, 100, 5
	rules := []string{"held", "recheck"}
	type coord struct {
		tx *Transactions
		g  *Groups
	}
	coords := map[string]coord{}
	for _, rule := range rules {
		dir := b.TempDir()
		topic, _ := openOffsetsTopicN(b, vfs.Default, dir, offsetsParts)
		g, err := OpenGroups(GroupsOptions{FS: vfs.Default, Dir: dir, TickInterval: time.Hour, OffsetsTopic: topic,
			Config: GroupConfig{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, OffsetsRetention: time.Hour}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { g.Close() })
		pids, err := OpenProducerIDs(vfs.Default, dir)
		if err != nil {
			b.Fatal(err)
		}
		tx, err := OpenTransactions(TxnOptions{FS: vfs.Default, Dir: dir, Topic: openTxnTopicN(b, vfs.Default, dir, txnParts),
			Config: TxnConfig{MaxTimeoutMs: 60_000, IDExpirationMs: 3_600_000}, ProducerIDs: pids, Markers: &discardMarkers{},
			Offsets: g, Registry: prometheus.NewRegistry(), Now: time.Now, RetryInterval: 5 * time.Millisecond,
			private: knobs{durableUnderDecideMu: rule == "held"}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { tx.Close() })
		coords[rule] = coord{tx, g}
	}
	ids := idsInDistinctPartitions("txn", enders+committers, txnParts)
	groups := idsInDistinctPartitions("g", committers, offsetsParts)
	state := map[string][]benchProducer{}
	for _, rule := range rules {
		state[rule] = initProducers(b, coords[rule].tx, ids)
	}
	offsets := map[TopicPartition]OffsetAndMetadata{{Topic: "data", Partition: 0}: {Offset: 1, LeaderEpoch: -1}}
	for range b.N {
		p50 := map[string][]time.Duration{}
		p99 := map[string][]time.Duration{}
		commits := map[string]int64{}
		took := map[string]time.Duration{}
		for range rounds {
			for _, rule := range rules {
				c := coords[rule]
				var mu sync.Mutex
				var lat []time.Duration
				var stop atomic.Bool
				var n atomic.Int64
				var ends, bg sync.WaitGroup
				began := time.Now()
				for i := range committers {
					bg.Go(func() {
						pr := &state[rule][enders+i]
						id, group := ids[enders+i], groups[i]
						stage := func() (func() error, error) {
							return c.g.StageTxnOffsetsAsync(group, pr.pid, pr.epoch, offsets)
						}
						for !stop.Load() {
							if err := c.tx.TxnOffsetCommitV2(id, pr.pid, pr.epoch, group, stage); err != nil {
								b.Error(err)
								return
							}
							res, err := c.tx.EndTxnV2(id, pr.pid, pr.epoch, true, false)
							if err != nil {
								b.Error(err)
								return
							}
							pr.pid, pr.epoch = res.ProducerID, res.ProducerEpoch
							n.Add(1)
						}
					})
				}
				for i := range enders {
					ends.Go(func() {
						pr := state[rule][i]
						for range perRound {
							if err := c.tx.AddPartitions(ids[i], pr.pid, pr.epoch, []TopicPartition{{"data", int32(i)}}); err != nil {
								b.Error(err)
								return
							}
							start := time.Now()
							err := c.tx.EndTxn(ids[i], pr.pid, pr.epoch, true)
							d := time.Since(start)
							if err != nil {
								b.Error(err)
								return
							}
							mu.Lock()
							lat = append(lat, d)
							mu.Unlock()
						}
					})
				}
				ends.Wait()
				stop.Store(true)
				bg.Wait()
				took[rule] += time.Since(began)
				if b.Failed() {
					b.FailNow()
				}
				slices.Sort(lat)
				p50[rule] = append(p50[rule], lat[len(lat)/2])
				p99[rule] = append(p99[rule], lat[len(lat)*99/100])
				commits[rule] += n.Load()
			}
		}
		for _, rule := range rules {
			b.ReportMetric(float64(medianOf(p50[rule]).Microseconds()), rule+"-endtxn-p50-µs")
			b.ReportMetric(float64(medianOf(p99[rule]).Microseconds()), rule+"-endtxn-p99-µs")
		}
		b.Logf("EndTxn p50 per round: held %v, recheck %v", p50["held"], p50["recheck"])
		b.Logf("EndTxn p99 per round: held %v, recheck %v", p99["held"], p99["recheck"])
		b.Logf("offset-commit transactions meanwhile: held %.0f/s, recheck %.0f/s",
			float64(commits["held"])/took["held"].Seconds(), float64(commits["recheck"])/took["recheck"].Seconds())
	}
}
