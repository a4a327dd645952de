package main

// Section txn: the transaction coordinator's EndTxn latency and its
// start-up with 100k transactional ids, this tree's minibroker beside the
// binary -txn-compare names (e.g. one built from the commit before the
// transaction state moved to __transaction_state), in the same
// run, alternating, medians of the runs.

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnRow is one measure of the section: samples per binary ("this tree",
// "base").
type txnRow struct {
	name, unit string
	samples    map[string][]float64
}

// txnBinaries are the binaries the section compares, by label.
func (r *report) txnBinaries() (labels []string, exes map[string]string) {
	exes = map[string]string{"this tree": filepath.Join(r.bin, "minibroker")}
	labels = []string{"this tree"}
	if r.opts.txnBase != "" {
		exes["base"] = r.opts.txnBase
		labels = append(labels, "base")
	}
	if r.opts.txnPeer != "" {
		exes["peer"] = r.opts.txnPeer
		labels = append(labels, "peer")
	}
	return labels, exes
}

// serveAt starts exe serving dir and returns once it accepts
// connections (the broker listens after its coordinators loaded), with
// the time that took.
func serveAt(exe, dir string, flags ...string) (*process, time.Duration, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, 0, err
	}
	p := &process{addr: addr}
	p.cmd = exec.Command(exe, append([]string{"serve", "--data-dir", dir, "--listen", addr, "--http-listen", "", "--log-level", "warn"}, flags...)...)
	p.cmd.Stderr = os.Stderr
	t0 := time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, 0, err
	}
	for deadline := t0.Add(5 * time.Minute); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return p, time.Since(t0), nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, 0, fmt.Errorf("%s serve did not listen on %s", exe, addr)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// endTxnLatencies runs producers transactional producers against addr,
// each committing n one-record transactions (after 5 unmeasured ones),
// and returns every EndTransaction's latency in ms.
func endTxnLatencies(addr string, producers, n int) ([]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	resp, err := kadm.NewClient(adm).CreateTopic(ctx, 8, 1, nil, "txbench")
	adm.Close()
	if err == nil && resp.Err != nil && resp.Err != kerr.TopicAlreadyExists {
		err = resp.Err
	}
	if err != nil {
		return nil, fmt.Errorf("create txbench: %w", err)
	}
	var mu sync.Mutex
	var out []float64
	errs := make(chan error, producers)
	var wg sync.WaitGroup
	for i := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(fmt.Sprintf("bench-%d", i)),
				kgo.DefaultProduceTopic("txbench"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				errs <- err
				return
			}
			defer cl.Close()
			for j := range n + 5 {
				if err := cl.BeginTransaction(); err != nil {
					errs <- err
					return
				}
				if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 8), Value: make([]byte, 100)}).FirstErr(); err != nil {
					errs <- err
					return
				}
				t0 := time.Now()
				if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
					errs <- err
					return
				}
				if j >= 5 {
					mu.Lock()
					out = append(out, float64(time.Since(t0).Microseconds())/1000)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return out, <-errs
}

func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// writeLegacyTxnLog writes dir/transaction-state.log as minibroker wrote
// it before __transaction_state (internal/coordinator/txn_legacy.go): the
// header, the coordinator epoch record (0), and n transactional ids in
// state Empty at epoch 0, producer ids 0..n-1, last updated now (so none
// expires). Filling a broker through n InitProducerId requests instead
// is quadratic (the coordinator's tick scans every id, before and after
// the change alike) and takes longer than the rest of the benchmark.
func writeLegacyTxnLog(dir string, n int) error {
	frame := func(b, body []byte) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
		b = binary.BigEndian.AppendUint32(b, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
		return append(b, body...)
	}
	data := frame([]byte("MBTX\x00\x01\x00\x00"), []byte{2, 0, 0, 0, 0})
	now := uint64(time.Now().UnixMilli())
	for i := range n {
		id := fmt.Sprintf("txn-%06d", i)
		b := []byte{1}
		b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
		b = append(b, id...)
		b = binary.BigEndian.AppendUint64(b, uint64(i))  // producer id
		b = binary.BigEndian.AppendUint64(b, ^uint64(0)) // last producer id -1
		b = binary.BigEndian.AppendUint16(b, 0)          // epoch
		b = binary.BigEndian.AppendUint16(b, 0xffff)     // last epoch -1
		b = binary.BigEndian.AppendUint32(b, 60_000)     // timeout
		b = append(b, 0)                                 // Empty
		b = binary.BigEndian.AppendUint64(b, ^uint64(0)) // start -1
		b = binary.BigEndian.AppendUint64(b, now)        // last update
		b = binary.BigEndian.AppendUint32(b, 0)          // partitions
		b = binary.BigEndian.AppendUint32(b, 0)          // groups
		data = frame(data, b)
	}
	return os.WriteFile(filepath.Join(dir, "transaction-state.log"), data, 0o644)
}

// onePartition is this tree with one __transaction_state partition: every
// transactional id's record in one file, one fsync shared by all, as the
// old transaction log.
const onePartition = "this tree, 1 partition"

func runTxnBench(r *report) error {
	labels, exes := r.txnBinaries()
	endLabels := append([]string{labels[0], onePartition}, labels[1:]...)
	exes[onePartition] = exes["this tree"]
	p99s := map[int]*txnRow{}
	for _, producers := range []int{1, 8} {
		p99s[producers] = &txnRow{name: fmt.Sprintf("EndTxn p99, %d producer(s), 100 commits each", producers), unit: "ms",
			samples: map[string][]float64{}}
		r.txn = append(r.txn, p99s[producers])
	}
	for run := range r.opts.runs {
		for k := range endLabels {
			label := endLabels[(k+run)%len(endLabels)]
			var flags []string
			if label == onePartition {
				flags = []string{"--set", "transaction.state.log.num.partitions=1"}
			}
			for _, producers := range []int{1, 8} {
				dir, err := os.MkdirTemp("", "bench-txn-")
				if err != nil {
					return err
				}
				p, _, err := serveAt(exes[label], dir, flags...)
				if err != nil {
					os.RemoveAll(dir)
					return err
				}
				lat, err := endTxnLatencies(p.addr, producers, 100)
				p.stop()
				os.RemoveAll(dir)
				if err != nil {
					return fmt.Errorf("EndTxn %s: %w", label, err)
				}
				p99 := percentile(lat, 0.99)
				p99s[producers].samples[label] = append(p99s[producers].samples[label], p99)
				logf("EndTxn %s, %d producer(s): p50 %.2f ms, p99 %.2f ms (%d commits)", label, producers, percentile(lat, 0.5), p99, len(lat))
			}
		}
	}

	// Start-up with txnIDs transactional ids: a data dir of the base's
	// (its transaction-state.log), and a copy of it moved into
	// __transaction_state by this tree's first start (the upgrade, timed
	// on its own); then each restarts on its own runs times, alternating.
	const txnIDs = 100_000
	start := &txnRow{name: fmt.Sprintf("start-up to listening, %d transactional ids", txnIDs), unit: "ms", samples: map[string][]float64{}}
	r.txn = append(r.txn, start)
	dirs := map[string]string{}
	defer func() {
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}()
	for _, label := range labels {
		dir, err := os.MkdirTemp("", "bench-txnids-")
		if err != nil {
			return err
		}
		dirs[label] = dir
		// An empty start first makes the data dir (meta.properties,
		// topics, the internal topics for this tree).
		p, _, err := serveAt(exes[label], dir)
		if err != nil {
			return err
		}
		p.stop()
		if err := writeLegacyTxnLog(dir, txnIDs); err != nil {
			return err
		}
		p, d, err := serveAt(exes[label], dir)
		if err != nil {
			return err
		}
		p.stop()
		if label == "this tree" {
			r.txnUpgrade = d
			logf("first start of this tree on a transaction-state.log of %d ids (the upgrade): %s", txnIDs, d.Round(time.Millisecond))
			if _, err := os.Stat(filepath.Join(dir, "transaction-state.log")); err == nil {
				return fmt.Errorf("this tree left transaction-state.log after its first start")
			}
		}
	}
	for run := range r.opts.runs {
		for k := range labels {
			label := labels[(k+run)%len(labels)]
			p, d, err := serveAt(exes[label], dirs[label])
			if err != nil {
				return err
			}
			p.stop()
			start.samples[label] = append(start.samples[label], float64(d.Microseconds())/1000)
			logf("start-up %s with %d transactional ids: %s", label, txnIDs, d.Round(time.Millisecond))
		}
	}
	return nil
}

func (r *report) renderTxn(p func(string, ...any)) {
	if len(r.txn) == 0 {
		return
	}
	labels, _ := r.txnBinaries()
	labels = append([]string{labels[0], onePartition}, labels[1:]...)
	p("## Transactions: EndTxn latency and start-up with 100k transactional ids\n\n")
	p("Each binary runs as `minibroker serve` on a fresh temp data dir, alternating, %d runs; the cells are the median (min–max) of the runs. "+
		"EndTxn: kgo transactional producers (transactions v2), each committing 100 one-record transactions after 5 unmeasured ones; "+
		"the latency of `EndTransaction` as the client sees it (the decision fsynced, the markers written). "+
		"Start-up: a data dir holding 100,000 transactional ids (Empty, epoch 0) as the base wrote them (`transaction-state.log`), and for this tree the same dir after its first start moved them into `__transaction_state`; "+
		"from the process start to its listener accepting (the coordinators load before the broker listens). ", r.opts.runs)
	if r.opts.txnBase != "" {
		p("`base` is `%s` (-txn-compare).\n\n", r.opts.txnBase)
	} else {
		p("No -txn-compare binary was given: this tree alone.\n\n")
	}
	peer := r.opts.txnPeer != ""
	if peer {
		p("`peer` is `%s` (-txn-peer).\n\n", r.opts.txnPeer)
	}
	p("| measure | unit |")
	for _, l := range labels {
		p(" %s |", l)
	}
	p(" ratio this tree/base |")
	if peer {
		p(" ratio this tree/peer |")
	}
	p("\n|---|---|")
	for range labels {
		p("---|")
	}
	p("---|")
	if peer {
		p("---|")
	}
	p("\n")
	for _, rw := range r.txn {
		p("| %s | %s |", rw.name, rw.unit)
		for _, l := range labels {
			p(" %s |", cell(rw.samples[l]))
		}
		p(" %s |", ratio(med(rw.samples["this tree"]), med(rw.samples["base"])))
		if peer {
			p(" %s |", ratio(med(rw.samples["this tree"]), med(rw.samples["peer"])))
		}
		p("\n")
	}
	if r.txnUpgrade > 0 {
		p("\nThe first start of this tree on a 100,000-id `transaction-state.log` (the upgrade into `__transaction_state`) took %s.\n", r.txnUpgrade.Round(time.Millisecond))
	}
	p("\n`%s` is this tree with `--set transaction.state.log.num.partitions=1` (EndTxn only): every id's record in one file, so concurrent requests share one fsync as they did in the old transaction log; with Kafka's 50, ids in different partitions each wait for an fsync of their own.\n\n", onePartition)
}
