// Command soak drives a minibroker binary for a long time with mixed load
// from several franz-go clients while restarting it cleanly (SIGTERM) and
// killing it (SIGKILL) in turn on the same data dir and ports; then checks
// that nothing acknowledged was lost or duplicated, that no aborted record
// is visible, and that the broker's goroutines, RSS and open files did not
// keep growing within a lifetime. `make soak` runs it; see docs/SOAK.md.
//
// It is a program rather than a `go test` so that it has no test timeout
// to fight, prints progress while it runs, takes its settings as flags
// (make soak SOAK_DURATION=10m) and is never picked up by `go test ./...`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

type options struct {
	duration       time.Duration
	brokerBin      string
	workDir        string
	csvPath        string
	restartMin     time.Duration
	restartMax     time.Duration
	sampleEvery    time.Duration
	idemProducers  int
	rate           int
	txnProducers   int
	plainConsumers int
	groupMembers   int
	churn          time.Duration
	keep           bool
	negative       bool
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 30*time.Minute, "how long the load runs (drain and verification come after)")
	flag.StringVar(&o.brokerBin, "broker", "", "minibroker binary (default: go build ./cmd/minibroker into the work dir)")
	flag.StringVar(&o.workDir, "work-dir", "", "data dir, broker logs and curve go here (default: a new temp dir)")
	flag.StringVar(&o.csvPath, "csv", "", "curve CSV (default: WORK-DIR/curve.csv)")
	flag.DurationVar(&o.restartMin, "restart-min", 2*time.Minute, "shortest broker lifetime")
	flag.DurationVar(&o.restartMax, "restart-max", 4*time.Minute, "longest broker lifetime")
	flag.DurationVar(&o.sampleEvery, "sample", 10*time.Second, "curve sampling interval")
	flag.IntVar(&o.idemProducers, "idempotent-producers", 2, "idempotent producers")
	flag.IntVar(&o.rate, "rate", 200, "records/s per idempotent producer")
	flag.IntVar(&o.txnProducers, "txn-producers", 2, "transactional producers")
	flag.IntVar(&o.plainConsumers, "plain-consumers", 2, "consumers without a group")
	flag.IntVar(&o.groupMembers, "group-members", 3, "consumer group members")
	flag.DurationVar(&o.churn, "churn", 30*time.Second, "mean interval between group member replacements")
	flag.BoolVar(&o.keep, "keep", false, "keep the work dir after a passing run")
	flag.BoolVar(&o.negative, "negative-control", false, "after the final SIGKILL, halve the newest segment of soak-idem-0 (the run must then fail)")
	flag.Parse()
	code, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// restartEvent is one planned stop and start of the broker.
type restartEvent struct {
	lifetime  int // the lifetime that was stopped
	sig       syscall.Signal
	uptime    time.Duration
	stopTook  time.Duration
	startTook time.Duration
}

func run(o options) (int, error) {
	began := time.Now()
	if o.workDir == "" {
		d, err := os.MkdirTemp("", "minibroker-soak-")
		if err != nil {
			return 0, err
		}
		o.workDir = d
	}
	if o.csvPath == "" {
		o.csvPath = filepath.Join(o.workDir, "curve.csv")
	}
	if o.brokerBin == "" {
		o.brokerBin = filepath.Join(o.workDir, "minibroker")
		logf("building %s", o.brokerBin)
		if out, err := exec.Command("go", "build", "-o", o.brokerBin, "./cmd/minibroker").CombinedOutput(); err != nil {
			return 0, fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	if abs, err := filepath.Abs(o.brokerBin); err == nil {
		o.brokerBin = abs
	}
	loadAtStart := loadAvg()
	b, err := newBroker(o.brokerBin, o.workDir)
	if err != nil {
		return 0, err
	}
	cv, err := newCurve(o.csvPath, began)
	if err != nil {
		return 0, err
	}
	defer cv.close()
	led := newLedger()
	var restarts []restartEvent

	startLifetime := func() error {
		took, err := b.start()
		if err != nil {
			return err
		}
		cv.lifetimeStarted(b.lifetime, time.Now())
		logf("lifetime %d serving on %s (http %s) after %s", b.lifetime, b.addr, b.httpAddr, took.Round(time.Millisecond))
		return nil
	}
	if err := startLifetime(); err != nil {
		return 0, err
	}
	defer b.stop(syscall.SIGKILL)
	if err := createTopics(b.addr); err != nil {
		return 0, err
	}
	logf("work dir %s, curve %s; load for %s with %d idempotent producers × %d rec/s, %d transactional producers, %d plain consumers, %d group members (churn ~%s), broker stopped every %s–%s alternating SIGTERM/SIGKILL",
		o.workDir, o.csvPath, o.duration, o.idemProducers, o.rate, o.txnProducers, o.plainConsumers, o.groupMembers, o.churn, o.restartMin, o.restartMax)

	sigCtx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stopSignals()
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	defer stopSampling()
	go cv.run(sampleCtx, b, o.sampleEvery)

	loadCtx, stopLoad := context.WithTimeout(sigCtx, o.duration)
	defer stopLoad()
	var producers, readers sync.WaitGroup
	for i := range o.idemProducers {
		producers.Go(func() { idempotentProducer(loadCtx, b.addr, fmt.Sprintf("idem%d", i), o.rate, led) })
	}
	for i := range o.txnProducers {
		producers.Go(func() { transactionalProducer(loadCtx, b.addr, fmt.Sprintf("soak-txn-%d", i), led) })
	}
	for i := range o.plainConsumers {
		readers.Go(func() { plainConsumer(loadCtx, b.addr, fmt.Sprintf("plain%d", i), led) })
	}
	readers.Go(func() { committedReader(loadCtx, b.addr, "committed-reader", led) })
	g := &group{addr: b.addr, led: led}
	readers.Go(func() { g.run(loadCtx, o.groupMembers, o.churn) })

	// Restart loop: alternate SIGTERM and SIGKILL every restartMin..restartMax.
	rng := rand.New(rand.NewPCG(uint64(began.UnixNano()), 3))
	nextSig := syscall.SIGTERM
	progress := time.NewTicker(time.Minute)
	defer progress.Stop()
	check := time.NewTicker(time.Second)
	defer check.Stop()
	lifetimeStart := time.Now()
	lifetimeLen := o.restartMin + time.Duration(rng.Int64N(int64(o.restartMax-o.restartMin)+1))
loop:
	for {
		select {
		case <-loadCtx.Done():
			break loop
		case <-progress.C:
			printProgress(began, b, cv, led)
		case <-check.C:
			if died, err := b.exitedEarly(); died {
				led.violation("lifetime %d exited on its own: %v (see %s)", b.lifetime, err, b.logDir)
				if err := startLifetime(); err != nil {
					return 0, err
				}
				lifetimeStart = time.Now()
				continue
			}
			if time.Since(lifetimeStart) < lifetimeLen {
				continue
			}
			ev := restartEvent{lifetime: b.lifetime, sig: nextSig, uptime: time.Since(lifetimeStart)}
			var err error
			ev.stopTook, err = b.stop(nextSig)
			if err != nil {
				led.violation("lifetime %d: %v", ev.lifetime, err)
			}
			began := time.Now()
			if err := startLifetime(); err != nil {
				return 0, err
			}
			ev.startTook = time.Since(began)
			logf("lifetime %d stopped by %v after %s (exit took %s); restarted in %s",
				ev.lifetime, ev.sig, ev.uptime.Round(time.Second), ev.stopTook.Round(time.Millisecond), ev.startTook.Round(time.Millisecond))
			restarts = append(restarts, ev)
			if nextSig == syscall.SIGTERM {
				nextSig = syscall.SIGKILL
			} else {
				nextSig = syscall.SIGTERM
			}
			lifetimeStart = time.Now()
			lifetimeLen = o.restartMin + time.Duration(rng.Int64N(int64(o.restartMax-o.restartMin)+1))
		}
	}
	loadTook := time.Since(began)
	logf("load stopped after %s; draining producers", loadTook.Round(time.Second))
	producers.Wait()
	readers.Wait() // churn stopped; members keep consuming

	groupEnds, err := waitGroupCaughtUp(b.addr, led)
	if err != nil {
		led.violation("group: %v", err)
	}
	g.stopAll()

	// A last SIGKILL right after the final acknowledgements, so the
	// verification reads what a crash left behind.
	ev := restartEvent{lifetime: b.lifetime, sig: syscall.SIGKILL, uptime: time.Since(lifetimeStart)}
	ev.stopTook, _ = b.stop(syscall.SIGKILL)
	if o.negative {
		msg, err := cutNewestSegment(b.dataDir)
		if err != nil {
			return 0, err
		}
		logf("%s", msg)
	}
	t := time.Now()
	if err := startLifetime(); err != nil {
		return 0, err
	}
	ev.startTook = time.Since(t)
	restarts = append(restarts, ev)
	logf("final SIGKILL and restart; verifying")
	vctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	ver := verify(vctx, b.addr, led, groupEnds)
	cancel()
	if s, ok := b.sample(context.Background()); ok {
		cv.add(s)
	}
	stopSampling()
	if took, err := b.stop(syscall.SIGTERM); err != nil {
		led.violation("final SIGTERM: %v (after %s)", err, took)
	}

	return report(o, began, loadTook, loadAtStart, b, cv, led, restarts, ver), nil
}

func createTopics(addr string) error {
	cl, err := kgo.NewClient(baseOpts(addr)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for topic, parts := range map[string]int32{topicIdem: idemPartitions, topicTxn: txnPartitions} {
		resp, err := adm.CreateTopic(ctx, parts, 1, nil, topic)
		if err != nil {
			return fmt.Errorf("create %s: %w", topic, err)
		}
		if resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create %s: %w", topic, resp.Err)
		}
	}
	return nil
}

// waitGroupCaughtUp waits until the group's acknowledged commits reach the
// end of every partition of topicIdem (the producers have stopped).
func waitGroupCaughtUp(addr string, led *ledger) (map[int32]int64, error) {
	cl, err := kgo.NewClient(baseOpts(addr)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topicIdem)
	if err != nil {
		return nil, err
	}
	want := offsetsOf(ends, topicIdem)
	for {
		led.mu.Lock()
		behind := map[int32]int64{}
		for p, end := range want {
			if led.commitAcked[p] < end {
				behind[p] = end - led.commitAcked[p]
			}
		}
		led.mu.Unlock()
		if len(behind) == 0 {
			return want, nil
		}
		select {
		case <-ctx.Done():
			return want, fmt.Errorf("not caught up 3 min after the load stopped; records behind by partition: %v", behind)
		case <-time.After(time.Second):
		}
	}
}

func printProgress(began time.Time, b *broker, cv *curve, led *ledger) {
	s, _ := cv.last()
	led.mu.Lock()
	acked, failed, committed, nviol := len(led.idemAcked), len(led.idemFailed), len(led.txnCommitted), len(led.violations)
	led.mu.Unlock()
	logf("%s lifetime %d: rss %d MiB, goroutines %d, fds %d | idempotent acked %d failed %d | txn records committed %d | plain read %d, group read %d, commits %d, churns %d | violations %d | load %s",
		time.Since(began).Round(time.Second), b.lifetime, s.rssKiB>>10, s.goroutines, s.openFDs, acked, failed, committed,
		led.plainConsumed.Load(), led.groupConsumed.Load(), led.groupCommits.Load(), led.churns.Load(), nviol, loadAvg())
}

func report(o options, began time.Time, loadTook time.Duration, loadAtStart string, b *broker, cv *curve,
	led *ledger, restarts []restartEvent, ver *verification) int {
	var violations []string
	p := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	p("\n==== minibroker soak summary ====")
	p("machine: %d CPUs (GOMAXPROCS %d), load average at start %s, at end %s", runtime.NumCPU(), runtime.GOMAXPROCS(0), loadAtStart, loadAvg())
	p("load ran %s (asked %s), whole run %s; work dir %s", loadTook.Round(time.Second), o.duration, time.Since(began).Round(time.Second), o.workDir)
	terms, kills := 0, 0
	var maxStop, maxStart time.Duration
	for _, r := range restarts {
		if r.sig == syscall.SIGTERM {
			terms++
		} else {
			kills++
		}
		maxStop, maxStart = max(maxStop, r.stopTook), max(maxStart, r.startTook)
	}
	p("broker lifetimes %d: %d SIGTERM, %d SIGKILL (including the final one); slowest exit %s, slowest restart to serving %s",
		b.lifetime, terms, kills, maxStop.Round(time.Millisecond), maxStart.Round(time.Millisecond))
	p("clients: idempotent produced %d, transactional produced %d, plain consumers read %d, read_committed reader read %d, group read %d, group commits acked %d (partition-commits), group assignments %d, member replacements %d",
		led.idemProduced.Load(), led.txnProduced.Load(), led.plainConsumed.Load(), led.liveTxnRead.Load(), led.groupConsumed.Load(),
		led.groupCommits.Load(), led.groupRebalance.Load(), led.churns.Load())
	led.mu.Lock()
	p("group resumptions after assignment: %v", led.groupResumes)
	led.mu.Unlock()

	p("\n-- verification (read_committed, after the final SIGKILL) --")
	for _, l := range ver.lines {
		p("  %s", l)
	}
	violations = append(violations, ver.violations...)

	sums, growth := cv.summarize()
	p("\n-- curve (%s), per lifetime: start / max / end; start and end are medians of the first/last %d samples after a %s warm-up --",
		o.csvPath, edgeSamples, warmUp)
	p("  %-4s %-7s %-7s %-20s %-26s %-14s %s", "life", "uptime", "samples", "goroutines", "RSS MiB", "open fds", "heap in use max MiB")
	for _, s := range sums {
		judged := ""
		if !s.judgedForGrowth {
			judged = " (too short to judge)"
		}
		p("  %-4d %-7s %-7d %-20s %-26s %-14s %d%s", s.lifetime, s.uptime.Round(time.Second), s.samples,
			fmt.Sprintf("%d / %d / %d", s.goStart, s.goMax, s.goEnd),
			fmt.Sprintf("%.1f / %.1f / %.1f", float64(s.rssStart)/1024, float64(s.rssMax)/1024, float64(s.rssEnd)/1024),
			fmt.Sprintf("%d / %d / %d", s.fdStart, s.fdMax, s.fdEnd), s.heapMax>>20, judged)
	}
	p("  growth bound within a lifetime: goroutines end ≤ start + max(%d, %d%%), RSS end ≤ start + max(%d MiB, %d%%), fds end ≤ start + max(%d, %d%%); across lifetimes: starting goroutines ≤ the first judged lifetime's + max(%d, 50%%)",
		goroutineSlack, goroutineSlackPct, rssSlackKiB>>10, rssSlackPct, fdSlack, fdSlackPct, goroutineSlack)
	violations = append(violations, growth...)

	p("\n-- broker log (warn and above), all lifetimes --")
	agg := map[string]int{}
	var warns, errs, panics int
	for _, ls := range b.lifetimeLogs() {
		ls.mu.Lock()
		warns, errs, panics = warns+ls.warn, errs+ls.errors, panics+ls.panics
		for m, n := range ls.messages {
			agg[m] += n
		}
		ls.mu.Unlock()
	}
	p("  warn %d, error %d, panic/fatal %d", warns, errs, panics)
	for _, l := range sortedCounts(agg, 25) {
		p("  %s", l)
	}
	if panics > 0 {
		violations = append(violations, fmt.Sprintf("broker logged %d panic/fatal lines (see %s)", panics, b.logDir))
	}

	p("\n-- client-side errors (expected around restarts) --")
	notes := led.sortedNotes()
	for i, n := range notes {
		if i == 25 {
			p("  … %d more", len(notes)-25)
			break
		}
		p("  %s", n)
	}

	led.mu.Lock()
	violations = append(led.violations, violations...)
	led.mu.Unlock()
	if len(violations) == 0 {
		p("\nPASS: no violations")
		if !o.keep {
			os.RemoveAll(filepath.Join(o.workDir, "data"))
		}
		return 0
	}
	p("\nFAIL: %d violations", len(violations))
	for _, v := range violations {
		p("  - %s", v)
	}
	p("work dir kept: %s", o.workDir)
	return 1
}

func sortedCounts(m map[string]int, limit int) []string {
	type kv struct {
		k string
		n int
	}
	var all []kv
	for k, n := range m {
		all = append(all, kv{k, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].k < all[j].k })
	var out []string
	for i, e := range all {
		if i == limit {
			out = append(out, fmt.Sprintf("… %d more distinct messages", len(all)-limit))
			break
		}
		out = append(out, fmt.Sprintf("%6d× %s", e.n, e.k))
	}
	return out
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func logf(format string, args ...any) {
	fmt.Printf("%s %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}
