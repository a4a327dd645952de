package mirror_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
	"github.com/minibroker/minibroker/minibrokertest"
)

// Tests of mirror defects found by review: each failed before its fix.

// openMirror opens a Manager on a local made of real partitions and
// mirrors topics from src with it, waiting until each partition 0 has
// want records.
func openMirror(t *testing.T, src *minibrokertest.Cluster, opts mirror.Options, setup func(*mirror.Manager), want int64, topics ...string) (*mirror.Manager, *local) {
	t.Helper()
	l := &local{dir: t.TempDir(), parts: map[string][]*partition.Partition{}}
	t.Cleanup(l.close)
	m, err := openManager(l, opts)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(m)
	}
	if err := m.Create("m", []string{src.Addr()}, ""); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context(), "m", topics); err != nil {
		t.Fatal(err)
	}
	for _, topic := range topics {
		waitEnd(t, l, topic, want)
	}
	return m, l
}

func waitEnd(t *testing.T, l *local, topic string, want int64) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ps := l.Partitions(topic); len(ps) > 0 && ps[0].Offsets().LogEnd == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached log end %d", topic, want)
		}
	}
}

func states(t *testing.T, m *mirror.Manager) map[string]mirror.State {
	t.Helper()
	st, err := m.Describe("m")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]mirror.State{}
	for _, p := range st.Partitions {
		out[p.Topic] = p.State
	}
	return out
}

// TestFailedStateSaveChangesNothing: when the state cannot be saved (the
// fsync of __mirror_state fails), a pause or a stop answers the error and
// changes nothing: the partition is still MIRRORING in describe, its
// fetcher still appends, and a restart finds what describe showed (the
// close, with the disk healed, writes the state back over the refused
// pause's batch). Before, both changed the record in memory and
// then saved: describe showed PAUSED (with the fetcher paused) or
// STOPPING that no restart would find.
func TestFailedStateSaveChangesNothing(t *testing.T) {
	src := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	produce(t, src.Addr(), "orders", 3)
	fs := errorfs.Wrap(vfs.Default)
	m, l := openMirror(t, src, mirror.Options{FS: fs, FetchMaxWait: 50 * time.Millisecond}, nil, 3, "orders")
	closed := false
	defer func() {
		if !closed {
			m.Close()
		}
	}()
	fs.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: mirror.StateTopicName})
	if err := m.Pause("m", nil); err == nil {
		t.Fatal("pause answered nil with the state log failing")
	}
	if err := m.Stop("m", nil); err == nil {
		t.Fatal("stop answered nil with the state log failing")
	}
	if got := states(t, m)["orders"]; got != mirror.Mirroring {
		t.Fatalf("after failed saves describe says %s, want MIRRORING", got)
	}
	produce(t, src.Addr(), "orders", 2)
	waitEnd(t, l, "orders", 5) // the fetcher was neither paused nor stopped
	if mode, _ := l.Partitions("orders")[0].Mode(); mode != partition.Mirrored {
		t.Fatal("partition writable after a failed stop")
	}
	fs.Clear()
	m.Close()
	closed = true
	m2, err := openManager(l, mirror.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if got := states(t, m2)["orders"]; got != mirror.Mirroring {
		t.Fatalf("after a restart: %s, want MIRRORING", got)
	}
}

// TestCloseWaitsForFetchersStoppedByIdentityFailure: a source topic
// recreated (a new topic id) fails the topic and stops its fetcher without
// waiting (the fetcher may be the caller). Manager.Close must still wait
// for that fetcher to exit. The knob holds the exiting fetcher; before,
// it was closed by a goroutine of its own that nothing waited for, and
// Close returned while it still ran.
func TestCloseWaitsForFetchersStoppedByIdentityFailure(t *testing.T) {
	src := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	produce(t, src.Addr(), "orders", 3)
	var armed atomic.Bool
	exiting := make(chan struct{}, 1)
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	// The default metadata interval (30 s): the fetcher, not the refresh, meets
	// the new topic id (a refresh that saw the topic gone twice would stop it).
	m, _ := openMirror(t, src, mirror.Options{FetchMaxWait: 50 * time.Millisecond},
		func(m *mirror.Manager) {
			mirror.SetBeforeFetcherExit(m, func(string, int32) {
				if armed.Load() {
					select {
					case exiting <- struct{}{}:
					default:
					}
					<-release
				}
			})
		}, 3, "orders")
	armed.Store(true)
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopics(context.Background(), "orders"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, err := adm.CreateTopic(context.Background(), 1, 1, nil, "orders")
		if err == nil && r.Err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recreate: %v %v", err, r.Err)
		}
	}
	select {
	case <-exiting:
	case <-time.After(20 * time.Second):
		t.Fatalf("the fetcher never stopped after the topic was recreated: %v", states(t, m))
	}
	if got := states(t, m)["orders"]; got != mirror.Failed {
		t.Fatalf("state %s, want FAILED", got)
	}
	closed := make(chan struct{})
	go func() { m.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a fetcher it had stopped was still running")
	case <-time.After(300 * time.Millisecond):
	}
	unblock()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return once the fetcher exited")
	}
}

// TestSlowAppendHoldsUpOnlyItsPartition: two topics led by the same source
// broker share one broker loop. While an append for one waits (the knob
// holds it, as an fsync with flush.messages=1 does), pausing the other
// returns at once. Before, the loop's lock was held across the append:
// the pause, waiting to take the other partition out of the loop, hung
// until the append ended (and so did the next fetch of every partition of
// that source broker).
func TestSlowAppendHoldsUpOnlyItsPartition(t *testing.T) {
	src := minibrokertest.Start(t, minibrokertest.Topic("slow", 1), minibrokertest.Topic("other", 1))
	produce(t, src.Addr(), "slow", 1)
	produce(t, src.Addr(), "other", 1)
	var armed atomic.Bool
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	m, _ := openMirror(t, src, mirror.Options{FetchMaxWait: 50 * time.Millisecond}, func(m *mirror.Manager) {
		mirror.SetAppendGate(m, func(topic string, _ int32) {
			if topic == "slow" && armed.Load() {
				select {
				case entered <- struct{}{}:
				default:
				}
				<-release
			}
		})
	}, 1, "slow", "other")
	defer m.Close()
	defer unblock() // before Close
	armed.Store(true)
	produce(t, src.Addr(), "slow", 1)
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the append never started")
	}
	paused := make(chan error, 1)
	go func() { paused <- m.Pause("m", []string{"other"}) }()
	select {
	case err := <-paused:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("pausing another partition waited for the held append")
	}
	unblock()
}

// TestPauseResumeWhileFetchingKeepsOffsets pauses and resumes a mirror of
// four partitions over and over while the source takes records: every
// cycle takes the fetchers out of their broker loop and back in while the
// loop fetches and appends for them. The mirror ends with exactly the
// source's records. Under -race it is the test of the data race on the
// fetcher's source topic id: each re-join rewrote it while the loop's
// appender could still read it for the answer of a fetch made before the
// pause (the loop now keeps the id in the membership).
func TestPauseResumeWhileFetchingKeepsOffsets(t *testing.T) {
	const parts = 4
	src := minibrokertest.Start(t, minibrokertest.Topic("orders", parts))
	produce(t, src.Addr(), "orders", parts)
	m, l := openMirror(t, src, mirror.Options{FetchMaxWait: 10 * time.Millisecond}, nil, 1, "orders")
	defer m.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.Addr()), kgo.DefaultProduceTopic("orders"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	stop := make(chan struct{})
	produced := make(chan int)
	go func() {
		n := parts
		defer func() { produced <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
				t.Error(err)
				return
			}
			n++
		}
	}()
	for i := 0; i < 40; i++ {
		if err := m.Pause("m", nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i%3) * time.Millisecond)
		if err := m.Resume("m", nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(5+i%7) * time.Millisecond)
	}
	close(stop)
	n := <-produced
	ends := func() (total int64) {
		for _, p := range l.Partitions("orders") {
			total += p.Offsets().LogEnd
		}
		return total
	}
	for deadline := time.Now().Add(20 * time.Second); ends() != int64(n); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("mirror has %d records, the source %d", ends(), n)
		}
	}
}

// TestFailedFailurePersistKeepsFetcher: a fetcher meets a failure
// (TOPIC_AUTHORIZATION_FAILED from the source: retriable) while the state
// log cannot be saved. Persisting FAILED fails, so the partition stays
// MIRRORING, and its fetcher must stay to meet the failure again: once
// the log can be saved, the partition is FAILED. Negative control
// (SetDropFailSaveError, the defect: fail()'s save error dropped and the
// fetcher gone): the partition stays MIRRORING with no fetcher, for as
// long as the test looks (3 s) after the log heals.
func TestFailedFailurePersistKeepsFetcher(t *testing.T) {
	for _, drop := range []bool{false, true} {
		t.Run(fmt.Sprintf("dropError=%v", drop), func(t *testing.T) {
			src := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
			produce(t, src.Addr(), "orders", 3)
			fs := errorfs.Wrap(vfs.Default)
			m, _ := openMirror(t, src, mirror.Options{FS: fs, FetchMaxWait: 50 * time.Millisecond}, func(m *mirror.Manager) {
				if drop {
					mirror.SetDropFailSaveError(m)
				}
			}, 3, "orders")
			t.Cleanup(m.Close)
			fs.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: mirror.StateTopicName})
			f := src.Fault(minibrokertest.FaultSpec{Kind: minibrokertest.FaultError, APIKey: minibrokertest.Key(kmsg.Fetch),
				Topic: "orders", ErrorCode: kerr.TopicAuthorizationFailed.Code})
			for deadline := time.Now().Add(20 * time.Second); f.Fired() < 1; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the source never refused a fetch")
				}
			}
			// The failure met the failing log at least once (a save is
			// tried on each; give the fetcher time to try).
			time.Sleep(300 * time.Millisecond)
			if got := states(t, m)["orders"]; got != mirror.Mirroring {
				t.Fatalf("with the state log failing: %s, want MIRRORING (FAILED not persisted)", got)
			}
			fs.Clear()
			wait := 20 * time.Second
			if drop {
				wait = 3 * time.Second
			}
			deadline := time.Now().Add(wait)
			for states(t, m)["orders"] != mirror.Failed && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			got := states(t, m)["orders"]
			switch {
			case !drop && got != mirror.Failed:
				t.Fatalf("after the log healed: %s, want FAILED (the fetcher met the failure again)", got)
			case drop && got != mirror.Mirroring:
				t.Fatalf("negative control: %s, want MIRRORING with no fetcher", got)
			}
		})
	}
}

// TestStreakResetOrderedBeforeNextFailure: a partition FAILED for a
// retriable reason (TOPIC_AUTHORIZATION_FAILED, once) is retried, and a
// fetch that succeeds after the retry ends its failure streak. The end of
// the streak is persisted by the broker loop's appender before it handles
// the next answer, so a second failure right after a record was mirrored
// is retried again (mirror.failed.retry.max.attempts=1: a streak of one
// retry is the limit), and the partition mirrors again. Negative control
// (SetAsyncStreakReset: the end of the streak in a goroutine of its own,
// here late by 300 ms): the second failure still sees the
// streak, is not retried ("not retried again after 1 retries in a row"),
// and the partition stays FAILED.
func TestStreakResetOrderedBeforeNextFailure(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			src := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
			produce(t, src.Addr(), "orders", 2)
			l := &local{dir: t.TempDir(), parts: map[string][]*partition.Partition{}}
			t.Cleanup(l.close)
			m, err := mirror.Open(l, l.dir, mirror.Options{FetchMaxWait: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(m.Close)
			if async {
				mirror.SetAsyncStreakReset(m, 300*time.Millisecond)
			}
			if err := m.CreateWith("m", []string{src.Addr()}, mirror.CreateOptions{Config: map[string]string{
				mirror.SettingFailedRetryMaxAttempts: "1", mirror.SettingFailedRetryInitialMs: "50"}}); err != nil {
				t.Fatal(err)
			}
			if err := m.Start(t.Context(), "m", []string{"orders"}); err != nil {
				t.Fatal(err)
			}
			waitEnd(t, l, "orders", 2)
			fail := func() {
				t.Helper()
				f := src.Fault(minibrokertest.FaultSpec{Kind: minibrokertest.FaultError, APIKey: minibrokertest.Key(kmsg.Fetch),
					Topic: "orders", ErrorCode: kerr.TopicAuthorizationFailed.Code, Count: 1})
				for deadline := time.Now().Add(20 * time.Second); f.Fired() < 1; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the fault never fired")
					}
				}
			}
			fail() // streak 1, retried after 50 ms
			produce(t, src.Addr(), "orders", 1)
			waitEnd(t, l, "orders", 3) // mirrored after the retry: the streak ends
			fail()                     // a new streak: retried again
			produce(t, src.Addr(), "orders", 1)
			wait := 20 * time.Second
			if async {
				wait = 3 * time.Second
			}
			deadline := time.Now().Add(wait)
			for l.Partitions("orders")[0].Offsets().LogEnd < 4 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			st, err := m.Describe("m")
			if err != nil {
				t.Fatal(err)
			}
			ps, end := st.Partitions[0], l.Partitions("orders")[0].Offsets().LogEnd
			switch {
			case !async && (end != 4 || ps.State != mirror.Mirroring):
				t.Fatalf("after the second failure: log end %d, %s (%s); want 4, MIRRORING", end, ps.State, ps.Reason)
			case async && (ps.State != mirror.Failed || !strings.Contains(ps.Reason, "not retried again")):
				t.Fatalf("negative control: %s (%s), log end %d; want FAILED, not retried", ps.State, ps.Reason, end)
			}
		})
	}
}
