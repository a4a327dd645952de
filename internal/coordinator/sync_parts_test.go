package coordinator

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/vfs"
)

// TestSyncPartsWaitsForAll: every partition's wait runs (in parallel, or
// in order with sequential), syncParts returns after all of them, and the
// error is the lowest failed partition's.
func TestSyncPartsWaitsForAll(t *testing.T) {
	for _, sequential := range []bool{false, true} {
		var mu sync.Mutex
		done := map[int32]int64{}
		var order []int32
		points := syncPoint{{7, 70}, {2, 20}, {40, 400}, {3, 30}}
		err := syncParts(points, sequential, func(p int32, end int64) error {
			mu.Lock()
			defer mu.Unlock()
			done[p] = end
			order = append(order, p)
			if p == 3 || p == 40 {
				return fmt.Errorf("partition %d failed", p)
			}
			return nil
		})
		if len(done) != 4 && !sequential {
			t.Fatalf("parallel: %d of 4 partitions waited for", len(done))
		}
		if err == nil || err.Error() != "partition 3 failed" {
			t.Fatalf("sequential=%v: error %v, want partition 3's", sequential, err)
		}
		for p, end := range done {
			if end != int64(p)*10 {
				t.Fatalf("partition %d waited up to %d", p, end)
			}
		}
		if sequential && fmt.Sprint(order) != "[2 3]" {
			t.Fatalf("sequential order %v, want [2 3] (stopping at the first failure)", order)
		}
	}
	if err := syncParts(nil, false, func(int32, int64) error { return errors.New("called") }); err != nil {
		t.Fatal(err)
	}
}

// countingTopic counts which wait the store asks of each partition.
type countingTopic struct {
	offsetsPartTopic
	sync, alone atomic.Int64
}

func (c *countingTopic) Sync(p int32, end int64) error {
	c.sync.Add(1)
	return c.offsetsPartTopic.Sync(p, end)
}

func (c *countingTopic) SyncAlone(p int32, end int64) error {
	c.alone.Add(1)
	return c.offsetsPartTopic.SyncAlone(p, end)
}

// TestCommitSyncsAloneUnlessJoinersComing: a commit with no other request
// for its __consumer_offsets partition on the way waits with SyncAlone
// (no yield before the fsync); with one coming (counted from before the
// coordinator's lock until its append), with Sync, so the group commit
// gathers it.
func TestCommitSyncsAloneUnlessJoinersComing(t *testing.T) {
	fs := vfs.Default
	dir := t.TempDir()
	part, _ := openOffsetsTopic(t, fs, dir)
	topic := &countingTopic{offsetsPartTopic: part}
	g, err := OpenGroups(GroupsOptions{FS: fs, Dir: dir, TickInterval: time.Hour, OffsetsTopic: topic,
		Config: GroupConfig{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, OffsetsRetention: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	commit := func(i int) {
		t.Helper()
		if _, err := g.CommitOffsets(CommitRequest{Group: "lone", Generation: -1, Version: 8,
			Offsets: map[TopicPartition]OffsetAndMetadata{{Topic: "t", Partition: 0}: {Offset: int64(i), LeaderEpoch: -1}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		commit(i)
	}
	if s, a := topic.sync.Load(), topic.alone.Load(); s != 0 || a < 3 {
		t.Fatalf("lone commits: %d Sync, %d SyncAlone; want 0 and at least 3", s, a)
	}
	alone := topic.alone.Load()
	appended := g.store.enter("lone") // another request for the partition on its way
	commit(3)
	appended()
	if s := topic.sync.Load(); s != 1 {
		t.Fatalf("a commit with another request coming: %d Sync, want 1", s)
	}
	commit(4)
	if s, a := topic.sync.Load(), topic.alone.Load(); s != 1 || a != alone+1 {
		t.Fatalf("after the other request appended: %d Sync, %d SyncAlone; want 1 and %d", s, a, alone+1)
	}
}
