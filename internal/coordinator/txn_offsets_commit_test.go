package coordinator

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/vfs"
)

// stageInto is a StageFunc that records "stage pid=N" in o's log (beside
// CompleteTxnOffsets' entries, so their order shows), its fsync done.
func stageInto(o *fakeOffsets, pid int64) StageFunc {
	return func() (func() error, error) {
		o.mu.Lock()
		o.done = append(o.done, fmt.Sprintf("stage pid=%d", pid))
		o.mu.Unlock()
		return func() error { return nil }, nil
	}
}

// offsetsAcrossDecision runs a TxnOffsetCommit v5 whose wait for its
// group add's fsync (made without decideMu) sees the producer's EndTxn
// commit the transaction, and returns the offsets log (stages and
// completions, in order) and TxnOffsetCommitV2's error.
func offsetsAcrossDecision(t *testing.T, skipCheck bool) (log string, err error) {
	h, tx, decided := decidingDuringFsync(t, skipCheck, func(k *knobs) *func() { return &k.afterOffsetsAddDurable })
	defer tx.Close()
	err = tx.TxnOffsetCommitV2("t", 0, 0, "g", stageInto(h.offsets, 0))
	if !*decided {
		t.Fatal("the hook did not run")
	}
	// What a TxnOffsetCommit sent after the decision answers.
	late := tx.TxnOffsetCommitV2("t", 0, 0, "g", stageInto(h.offsets, 0))
	if !errors.Is(late, ErrInvalidProducerEpoch) {
		t.Fatalf("a TxnOffsetCommit after the commit: %v, want INVALID_PRODUCER_EPOCH", late)
	}
	return fmt.Sprint(h.offsets.done), err
}

// TestTxnOffsetCommitRechecksAfterFsync: a TxnOffsetCommit v5 waits for
// its group add's fsync without decideMu, so the transaction can be
// decided meanwhile (here committed, its offsets completed); the offsets
// must then not be staged, since they would be left pending after their
// transaction's marker (never completed, or completed by a later
// transaction of the producer), and the request gets what one sent after
// the decision gets (INVALID_PRODUCER_EPOCH: the commit bumped the
// epoch). Negative control: with the decideGen check skipped, the
// offsets are staged after the completion.
func TestTxnOffsetCommitRechecksAfterFsync(t *testing.T) {
	log, err := offsetsAcrossDecision(t, false)
	if log != "[pid=0 commit]" {
		t.Fatalf("offsets log: %s", log)
	}
	if !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("the TxnOffsetCommit across the decision: %v, want INVALID_PRODUCER_EPOCH", err)
	}

	log, err = offsetsAcrossDecision(t, true)
	if err != nil || log != "[pid=0 commit stage pid=0]" {
		t.Fatalf("negative control: without the decideGen check, offsets log %s, error %v: the scenario does not reach the rule", log, err)
	}
}

// TestTxnOffsetCommitHoldsDecideMuAfterRounds: decideMu taken exclusively
// during every wait for the group add's fsync (the coordinator's tick,
// deciding nothing) sends TxnOffsetCommitV2 round again; after
// maxOptimisticAdds rounds it waits holding decideMu and stages.
func TestTxnOffsetCommitHoldsDecideMuAfterRounds(t *testing.T) {
	rounds := 0
	h, tx := openWithFsyncHook(t, func(k *knobs) *func() { return &k.afterOffsetsAddDurable }, func(*knobs) {},
		func(tx *Transactions) { rounds++; tx.tick() })
	defer tx.Close()
	must(t, tx.TxnOffsetCommitV2("t", 0, 0, "g", stageInto(h.offsets, 0)))
	if rounds != maxOptimisticAdds {
		t.Fatalf("%d optimistic rounds, want %d", rounds, maxOptimisticAdds)
	}
	if _, err := tx.EndTxnV2("t", 0, 0, true, false); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(h.offsets.done); got != "[stage pid=0 pid=0 commit]" {
		t.Fatalf("offsets log: %s", got)
	}
}

// gateFS holds the fsyncs of files whose path contains path, once armed,
// until opened: a slow disk under one __transaction_state partition.
type gateFS struct {
	vfs.FS
	path    string
	mu      sync.Mutex
	armed   bool
	entered chan struct{} // closed when a held fsync starts
	open    chan struct{} // closed to let the fsyncs go
}

func newGateFS(path string) *gateFS {
	return &gateFS{FS: vfs.Default, path: path, entered: make(chan struct{}), open: make(chan struct{})}
}

func (g *gateFS) arm() { g.mu.Lock(); g.armed = true; g.mu.Unlock() }

func (g *gateFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := g.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.Contains(name, g.path) {
		return f, err
	}
	return gateFile{File: f, g: g}, nil
}

type gateFile struct {
	vfs.File
	g *gateFS
}

func (f gateFile) Sync() error {
	f.g.mu.Lock()
	armed := f.g.armed
	if armed {
		select {
		case <-f.g.entered:
		default:
			close(f.g.entered)
		}
	}
	f.g.mu.Unlock()
	if armed {
		<-f.g.open
	}
	return f.File.Sync()
}

// slowStage is a StageFunc whose fsync (wait) blocks until open is
// closed; entered is closed when it starts waiting.
func slowStage(entered, open chan struct{}) StageFunc {
	return func() (func() error, error) {
		return func() error {
			close(entered)
			<-open
			return nil
		}, nil
	}
}

// endTxnBehindSlowFsync opens a coordinator on a gated disk, has producer
// "a" send a TxnOffsetCommit (explicit: v0-v4, else v5) whose fsync, in
// __transaction_state (the group add's, inTxnLog) or of the staged
// offsets, does not return until let go, and while it is held commits
// producer "b"'s transaction (another __transaction_state partition). It
// reports whether b's EndTxn finished while the fsync was held, waiting
// for it up to patience.
func endTxnBehindSlowFsync(t *testing.T, hold, explicit, inTxnLog bool, patience time.Duration) bool {
	const a, b = "a", "b"
	if PartitionFor(a, testTxnPartitions) == PartitionFor(b, testTxnPartitions) {
		t.Fatal("a and b share a __transaction_state partition")
	}
	gfs := newGateFS(fmt.Sprintf("__transaction_state-%d/", PartitionFor(a, testTxnPartitions)))
	h := newTxnHarness(t, gfs, t.TempDir())
	h.knobs.durableUnderDecideMu = hold
	tx := h.open()
	defer tx.Close()
	for _, id := range []string{a, b} {
		if _, err := tx.InitProducerID(id, 10_000, -1, -1); err != nil {
			t.Fatal(err)
		}
	}
	must(t, tx.AddPartitions(b, 1, 0, []TopicPartition{{"x", 0}}))
	if explicit {
		must(t, tx.AddOffsets(a, 0, 0, "g"))
	}
	entered, open := gfs.entered, gfs.open
	stage := StageFunc(func() (func() error, error) { return func() error { return nil }, nil })
	if !inTxnLog {
		entered, open = make(chan struct{}), make(chan struct{})
		stage = slowStage(entered, open)
	} else {
		gfs.arm()
	}
	committed := make(chan error, 1)
	go func() {
		if explicit {
			committed <- tx.TxnOffsetCommit(a, 0, 0, "g", stage)
		} else {
			committed <- tx.TxnOffsetCommitV2(a, 0, 0, "g", stage)
		}
	}()
	<-entered
	ended := make(chan error, 1)
	go func() { ended <- tx.EndTxn(b, 1, 0, true) }()
	var done bool
	select {
	case err := <-ended:
		must(t, err)
		done = true
	case <-time.After(patience):
	}
	close(open)
	must(t, <-committed)
	if !done {
		must(t, <-ended)
	}
	if got := fmt.Sprint(h.markers.take()); got != "[x-0 commit pid=1 epoch=0 coord=0]" {
		t.Fatalf("b's markers: %s", got)
	}
	return done
}

// TestEndTxnNotHeldByOffsetsFsync: a TxnOffsetCommit waits for its
// fsyncs (the group add's in __transaction_state for v5, the staged
// offsets' in __consumer_offsets) without decideMu, so another
// producer's EndTxn is decided and answered while those fsyncs are slow.
// Negative control: with the waits made under decideMu (the hold before),
// that EndTxn is still waiting when the fsync is let go.
func TestEndTxnNotHeldByOffsetsFsync(t *testing.T) {
	for _, c := range []struct {
		name               string
		explicit, inTxnLog bool
	}{
		{"v5 group add's fsync", false, true},
		{"v5 staged offsets' fsync", false, false},
		{"v0-v4 staged offsets' fsync", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !endTxnBehindSlowFsync(t, false, c.explicit, c.inTxnLog, 30*time.Second) {
				t.Fatal("the EndTxn waited for another producer's TxnOffsetCommit fsync")
			}
			if endTxnBehindSlowFsync(t, true, c.explicit, c.inTxnLog, 300*time.Millisecond) {
				t.Fatal("negative control: with the fsync waited for under decideMu the EndTxn still finished: the scenario does not reach the rule")
			}
		})
	}
}

// offsetsAfterCrash stages a TxnOffsetCommit v5's offset (42) in a real
// group coordinator over __consumer_offsets and, before the offsets'
// fsync is waited for (after decideMu is released), commits the
// transaction if commit is set, then crashes (only fsynced bytes kept);
// it returns the group's committed offsets after the restart, and how
// many producers have offsets staged there.
func offsetsAfterCrash(t *testing.T, commit bool) (committed map[TopicPartition]OffsetAndMetadata, staged int) {
	mem := memFS(t)
	openGroups := func(fs vfs.FS) *Groups {
		topic, _ := openOffsetsTopic(t, fs, "/data")
		g, err := OpenGroups(GroupsOptions{FS: fs, Dir: "/data", TickInterval: time.Hour, OffsetsTopic: topic,
			Config: GroupConfig{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, OffsetsRetention: time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := openGroups(mem)
	pids, err := OpenProducerIDs(mem, "/data")
	must(t, err)
	var tx *Transactions
	var crashed vfs.FS
	tx, err = OpenTransactions(TxnOptions{FS: mem, Dir: "/data", Topic: openTxnTopic(t, mem, "/data"),
		Config: TxnConfig{MaxTimeoutMs: 60_000, IDExpirationMs: 3_600_000}, ProducerIDs: pids, Markers: &fakeMarkers{},
		Offsets: g, Now: time.Now, RetryInterval: 5 * time.Millisecond,
		private: knobs{beforeOffsetsWait: func() {
			if commit {
				if _, err := tx.EndTxnV2("t", 0, 0, true, false); err != nil {
					t.Errorf("EndTxn before the offsets' fsync: %v", err)
				}
			}
			crashed = mem.CrashClone()
		}}})
	must(t, err)
	if _, err := tx.InitProducerID("t", 10_000, -1, -1); err != nil {
		t.Fatal(err)
	}
	must(t, tx.TxnOffsetCommitV2("t", 0, 0, "g", func() (func() error, error) {
		return g.StageTxnOffsetsAsync("g", 0, 0, map[TopicPartition]OffsetAndMetadata{{Topic: "data"}: {Offset: 42, LeaderEpoch: -1}})
	}))
	if crashed == nil {
		t.Fatal("the hook did not run")
	}
	g.Kill()
	tx.Close()
	g2 := openGroups(crashed)
	defer g2.Close()
	g2.mu.Lock()
	defer g2.mu.Unlock()
	if gr := g2.core.groups["g"]; gr != nil {
		staged = len(gr.pendingTxn)
	}
	return g2.core.Offsets("g"), staged
}

// TestTxnOffsetsCoveredByMarkerFsync: TxnOffsetCommit waits for its
// offsets' fsync without decideMu, so the transaction can be committed
// before that fsync; the offsets were appended to the group's
// __consumer_offsets partition under decideMu, before the commit's
// marker, so the marker's fsync makes them durable and a crash right
// after the commit keeps them. Negative control: the same crash without
// the commit loses them, staged or committed (they were not fsynced: the
// survival above is the marker's doing).
func TestTxnOffsetsCoveredByMarkerFsync(t *testing.T) {
	committed, staged := offsetsAfterCrash(t, true)
	if got := committed[TopicPartition{Topic: "data"}]; got.Offset != 42 || staged != 0 {
		t.Fatalf("after the crash: committed %+v (want 42), %d producers with staged offsets", got, staged)
	}
	if committed, staged := offsetsAfterCrash(t, false); len(committed) != 0 || staged != 0 {
		t.Fatalf("negative control: offsets never fsynced survived the crash (committed %v, %d staged): the test proves nothing", committed, staged)
	}
}
