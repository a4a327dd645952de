package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// forEachBounded calls every index once, never more than workers at a
// time, and returns every call's error in its slot.
func TestForEachBounded(t *testing.T) {
	for _, c := range []struct{ workers, n int }{{1, 10}, {2, 10}, {8, 100}, {8, 3}, {4, 0}, {0, 5}} {
		t.Run(fmt.Sprintf("workers=%d,n=%d", c.workers, c.n), func(t *testing.T) {
			var mu sync.Mutex
			running, peak := 0, 0
			calls := make([]int, c.n)
			errs := forEachBounded(c.workers, c.n, func(i int) error {
				mu.Lock()
				calls[i]++
				running++
				peak = max(peak, running)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				running--
				mu.Unlock()
				if i%3 == 0 {
					return fmt.Errorf("call %d", i)
				}
				return nil
			})
			if want := max(1, min(c.workers, c.n)); c.n > 0 && peak > want {
				t.Fatalf("%d calls at once, want at most %d", peak, want)
			}
			if len(errs) != c.n {
				t.Fatalf("%d errors for %d calls", len(errs), c.n)
			}
			for i := range c.n {
				if calls[i] != 1 {
					t.Fatalf("fn(%d) called %d times", i, calls[i])
				}
				if want := i%3 == 0; (errs[i] != nil) != want || (want && errs[i].Error() != fmt.Sprintf("call %d", i)) {
					t.Fatalf("errs[%d] = %v", i, errs[i])
				}
			}
			if c.n > 0 && errors.Join(errs...) == nil {
				t.Fatal("errors lost")
			}
		})
	}
}

// idempotentBatch is a v2 batch of n records from producer pid, epoch 0,
// first sequence seq.
func idempotentBatch(pid int64, seq int32, n int) []byte {
	var recs []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte{byte('a' + i)}}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	now := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(n - 1), FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: pid, ProducerEpoch: 0, FirstSequence: seq, NumRecords: int32(n), Records: recs}
	rb.Length = int32(61 - 12 + len(recs))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// Partitions of several topics are closed and opened 8 at a time, on real
// files, after a clean shutdown and after a crash; each comes back with
// its own log end and producer state (run with -race: nothing in a
// partition's close or open may be shared with another's).
func TestPartitionsCloseAndOpenInParallel(t *testing.T) {
	dir := t.TempDir()
	const threads = "num.recovery.threads.per.data.dir=8"
	b := newTestBroker(t, dir, threads)
	sizes := map[string]int32{"a": 40, "b": 24, "c": 1}
	for name, n := range sizes {
		if _, err := b.CreateTopic(name, n, nil, [16]byte{}, false); err != nil {
			t.Fatal(err)
		}
	}
	// Partition i of topic t gets 1+i%3 records from producer pid(t, i).
	pid := func(topic string, i int32) int64 { return int64(topic[0])*1000 + int64(i) }
	appendRound := func(b *Broker, round int) {
		for name, n := range sizes {
			for i := range n {
				p, _ := b.Partition(name, i)
				k := 1 + int(i)%3
				if _, err := p.AppendAsLeader(idempotentBatch(pid(name, i), int32(round*k), k)); err != nil {
					t.Fatalf("%s-%d round %d: %v", name, i, round, err)
				}
			}
		}
	}
	check := func(stage string, b *Broker, rounds int) {
		t.Helper()
		if got := b.partitionCount() - internalPartitionCount(b); got != 65 {
			t.Fatalf("%s: %d partitions", stage, got)
		}
		for name, n := range sizes {
			for i := range n {
				p, ok := b.Partition(name, i)
				if !ok || p.Topic != name || p.Index != i {
					t.Fatalf("%s: %s-%d is %v", stage, name, i, p)
				}
				k := int64(1 + int(i)%3)
				if end := p.Offsets().LogEnd; end != int64(rounds)*k {
					t.Fatalf("%s: %s-%d ends at %d, want %d", stage, name, i, end, int64(rounds)*k)
				}
				ps := p.Producers()
				if len(ps) != 1 || ps[0].ProducerID != pid(name, i) ||
					ps[0].Batches[len(ps[0].Batches)-1].LastSeq != int32(int64(rounds)*k-1) {
					t.Fatalf("%s: %s-%d producers %+v", stage, name, i, ps)
				}
			}
		}
	}
	appendRound(b, 0)
	closeBroker(t, b)
	b = newTestBroker(t, dir, threads)
	check("after close", b, 1)
	appendRound(b, 1)
	b.Kill()
	b = newTestBroker(t, dir, threads)
	defer closeBroker(t, b)
	check("after crash", b, 2)
}

// Close closes every partition even when some fail, and returns every
// failure.
func TestCloseReturnsEveryPartitionError(t *testing.T) {
	dir := t.TempDir()
	fs := errorfs.Wrap(vfs.Default)
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = dir, "127.0.0.1:0", ""
	if err := cfg.SetPair("num.recovery.threads.per.data.dir=4"); err != nil {
		t.Fatal(err)
	}
	b, err := New(Options{Config: cfg, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic("t", 20, nil, [16]byte{}, false); err != nil {
		t.Fatal(err)
	}
	for i := range int32(20) {
		p, _ := b.Partition("t", i)
		if _, err := p.AppendAsLeader(benchBatch(1, 10)); err != nil {
			t.Fatal(err)
		}
	}
	failing := []string{"t-3", "t-11", "t-17"}
	for _, name := range failing {
		fs.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: name + string(filepath.Separator)})
	}
	err = b.Close(context.Background())
	for _, name := range failing {
		if err == nil || !strings.Contains(err.Error(), name+string(filepath.Separator)) {
			t.Fatalf("close error %v does not name %s", err, name)
		}
	}
	for i := range 20 {
		name := fmt.Sprintf("t-%d", i)
		_, statErr := os.Stat(filepath.Join(dir, name, "clean-shutdown"))
		if clean, bad := statErr == nil, slices.Contains(failing, name); clean == bad {
			t.Errorf("%s: clean-shutdown marker present: %v (its fsync failed: %v)", name, clean, bad)
		}
	}
}

// A partition that fails to open at start-up fails New; the partitions
// opened beside it are closed again (no flusher goroutine left), and the
// next start opens them all.
func TestStartupOpenFailureClosesTheOthers(t *testing.T) {
	dir := t.TempDir()
	b := newTestBroker(t, dir)
	if _, err := b.CreateTopic("t", 30, nil, [16]byte{}, false); err != nil {
		t.Fatal(err)
	}
	closeBroker(t, b)

	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fs := errorfs.Wrap(vfs.Default)
	fs.Inject(errorfs.Rule{Op: errorfs.OpReadDir, PathContains: "t-7"})
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = dir, "127.0.0.1:0", ""
	if err := cfg.SetPair("num.recovery.threads.per.data.dir=4"); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Config: cfg, FS: fs}); err == nil || !strings.Contains(err.Error(), "t-7") {
		t.Fatalf("New with t-7 unreadable: %v", err)
	}
	fs.Clear()
	b, err := New(Options{Config: cfg, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if n := b.partitionCount() - internalPartitionCount(b); n != 30 {
		t.Fatalf("%d partitions", n)
	}
	closeBroker(t, b)
}

// internalPartitionCount: the partitions of the internal topics the broker
// creates at start-up (internal_topics.go).
func internalPartitionCount(b *Broker) int {
	n := 0
	for _, name := range []string{offsetsTopic, txnTopic, mirrorStateTopic, shareStateTopic} {
		n += len(b.partitionsOf(name))
	}
	return n
}
