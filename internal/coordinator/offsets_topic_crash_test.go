package coordinator

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// TestGroupsTopicCrashKeepsAcknowledgedCommits: concurrent commits of
// groups spread over the partitions of __consumer_offsets, then a crash
// that keeps only fsynced bytes: every acknowledged commit is there.
func TestGroupsTopicCrashKeepsAcknowledgedCommits(t *testing.T) {
	fs := memFS(t)
	g := openTopicGroups(t, fs, knobs{})
	const writers, commits = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range commits {
				if _, err := g.CommitOffsets(CommitRequest{Group: fmt.Sprint("g", w), Generation: -1,
					Offsets: map[TopicPartition]OffsetAndMetadata{{Topic: "t", Partition: int32(i % 3)}: {Offset: int64(i), LeaderEpoch: -1}}}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	crashed := fs.CrashClone()
	g.Kill()
	g2 := openTopicGroups(t, crashed, knobs{})
	defer g2.Close()
	for w := range writers {
		offs := g2.ListGroupOffsets(fmt.Sprint("g", w))
		for p := range int32(3) {
			want := int64(commits - 1 - (commits-1-int(p)+3)%3) // the last i with i%3 == p
			if got := offs[TopicPartition{Topic: "t", Partition: p}].Offset; got != want {
				t.Errorf("group g%d partition %d: offset %d after the crash, want %d", w, p, got, want)
			}
		}
	}
}

// TestGroupsTopicUnsyncedIsLost is the negative control for the crash
// test: records appended to the topic but not yet fsynced (what a commit
// answered before its fsync would have acknowledged) do not survive a
// crash.
func TestGroupsTopicUnsyncedIsLost(t *testing.T) {
	fs := memFS(t)
	g := openTopicGroups(t, fs, knobs{})
	g.mu.Lock()
	g.core.CommitOffsets(time.Now(), CommitRequest{Group: "g", Generation: -1,
		Offsets: map[TopicPartition]OffsetAndMetadata{{Topic: "t"}: {Offset: 42}}})
	if _, err := g.store.append(g.core, g.core.takeRecords()); err != nil { // appended, no wait
		t.Fatal(err)
	}
	if got := g.core.Offsets("g")[TopicPartition{Topic: "t"}].Offset; got != 42 {
		t.Fatalf("offset in memory %d", got)
	}
	crashed := fs.CrashClone()
	g.mu.Unlock()
	g.Kill()
	g2 := openTopicGroups(t, crashed, knobs{})
	defer g2.Close()
	if offs := g2.ListGroupOffsets("g"); len(offs) != 0 {
		t.Fatalf("an offset that was never fsynced survived the crash: %v (the crash test proves nothing)", offs)
	}
}

// TestGroupsTopicFailedFsync: a commit whose fsync fails is answered with
// COORDINATOR_NOT_AVAILABLE, never acknowledged.
func TestGroupsTopicFailedFsync(t *testing.T) {
	efs := errorfs.Wrap(memFS(t))
	g := openTopicGroups(t, efs, knobs{})
	defer g.Close()
	efs.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: "__consumer_offsets"})
	_, err := g.CommitOffsets(CommitRequest{Group: "g", Generation: -1,
		Offsets: map[TopicPartition]OffsetAndMetadata{{Topic: "t"}: {Offset: 1}}})
	if !errors.Is(err, ErrCoordinatorNotAvailable) {
		t.Fatalf("commit with a failing fsync: %v, want ErrCoordinatorNotAvailable", err)
	}
}
