package coordinator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

func openTestGroups(t *testing.T, fs vfs.FS, compactBytes int64) *Groups {
	t.Helper()
	g, err := OpenGroups(GroupsOptions{
		FS: fs, Dir: "/data", CompactBytes: compactBytes, TickInterval: 10 * time.Millisecond,
		Config: GroupConfig{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, OffsetsRetention: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func memFS(t *testing.T) *errorfs.MemFS {
	fs := errorfs.NewMem()
	if err := fs.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestGroupLogCrashKeepsAcknowledgedCommits: concurrent commits (sharing
// fsyncs), then a crash that keeps only synced bytes: every acknowledged
// commit is there.
func TestGroupLogCrashKeepsAcknowledgedCommits(t *testing.T) {
	fs := memFS(t)
	g := openTestGroups(t, fs, 0)
	const writers, commits = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range commits {
				tp := TopicPartition{Topic: "t", Partition: int32(w)}
				if _, err := g.CommitOffsets(CommitRequest{Group: "g", Generation: -1,
					Offsets: map[TopicPartition]OffsetAndMetadata{tp: {Offset: int64(i), LeaderEpoch: -1}}}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	crashed := fs.CrashClone()
	g.Kill()
	g2 := openTestGroups(t, crashed, 0)
	defer g2.Close()
	offs := g2.ListGroupOffsets("g")
	for w := range writers {
		if got := offs[TopicPartition{Topic: "t", Partition: int32(w)}].Offset; got != commits-1 {
			t.Errorf("partition %d: offset %d after crash, want %d", w, got, commits-1)
		}
	}
}

// TestGroupLogTornTail: a torn last frame is cut off at load; everything
// before it stays.
func TestGroupLogTornTail(t *testing.T) {
	for _, cut := range []int{1, 5, 9, 20} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			fs := memFS(t)
			g := openTestGroups(t, fs, 0)
			for i := range 3 {
				if err := g.CommitOffsetsAdmin("g", map[TopicPartition]OffsetAndMetadata{{Topic: "t", Partition: int32(i)}: {Offset: 7}}); err != nil {
					t.Fatal(err)
				}
			}
			g.Close()
			path := filepath.Join("/data", groupLogFile)
			data, _ := vfs.ReadFile(fs, path)
			f, _ := fs.OpenFile(path, os.O_RDWR, 0)
			f.Truncate(int64(len(data) - cut))
			f.Close()
			g2 := openTestGroups(t, fs, 0)
			offs := g2.ListGroupOffsets("g")
			g2.Close()
			if len(offs) != 2 {
				t.Fatalf("%d offsets after a torn tail, want 2: %v", len(offs), offs)
			}
			// The cut file takes new frames after the valid prefix.
			g3 := openTestGroups(t, fs, 0)
			g3.CommitOffsetsAdmin("g", map[TopicPartition]OffsetAndMetadata{{Topic: "t", Partition: 9}: {Offset: 1}})
			g3.Close()
			g4 := openTestGroups(t, fs, 0)
			defer g4.Close()
			if n := len(g4.ListGroupOffsets("g")); n != 3 {
				t.Fatalf("%d offsets after appending to a cut log, want 3", n)
			}
		})
	}
}

// TestGroupLogCompaction: repeated commits of the same partitions keep the
// file bounded (rewritten from the live state), and a reload sees the last
// offsets.
func TestGroupLogCompaction(t *testing.T) {
	fs := memFS(t)
	g := openTestGroups(t, fs, 4096)
	for i := range 2000 {
		if _, err := g.CommitOffsets(CommitRequest{Group: "g", Generation: -1,
			Offsets: map[TopicPartition]OffsetAndMetadata{{Topic: "t", Partition: int32(i % 4)}: {Offset: int64(i)}}}); err != nil {
			t.Fatal(err)
		}
		if i%200 == 0 {
			time.Sleep(20 * time.Millisecond) // let the loop rewrite
		}
	}
	time.Sleep(50 * time.Millisecond)
	g.Close()
	st, err := fs.Stat(filepath.Join("/data", groupLogFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 3*4096 {
		t.Fatalf("group log is %d bytes after 2000 commits of 4 partitions: not compacted", st.Size())
	}
	g2 := openTestGroups(t, fs, 4096)
	defer g2.Close()
	for p := range 4 {
		if got := g2.ListGroupOffsets("g")[TopicPartition{Topic: "t", Partition: int32(p)}].Offset; got != int64(1996+p) {
			t.Errorf("partition %d: %d, want %d", p, got, 1996+p)
		}
	}
}

// TestGroupLogFailedFsync: a commit whose fsync fails is answered with
// COORDINATOR_NOT_AVAILABLE, never acknowledged.
func TestGroupLogFailedFsync(t *testing.T) {
	efs := errorfs.Wrap(memFS(t))
	g := openTestGroups(t, efs, 0)
	defer g.Close()
	if err := g.CommitOffsetsAdmin("g", map[TopicPartition]OffsetAndMetadata{{Topic: "s"}: {Offset: 1}}); err != nil {
		t.Fatal(err) // creates the file
	}
	efs.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: groupLogFile})
	_, err := g.CommitOffsets(CommitRequest{Group: "g", Generation: -1,
		Offsets: map[TopicPartition]OffsetAndMetadata{{Topic: "t"}: {Offset: 1}}})
	if !errors.Is(err, ErrCoordinatorNotAvailable) {
		t.Fatalf("commit with a failing fsync: %v, want ErrCoordinatorNotAvailable", err)
	}
}

// TestGroupLogCreatedByFirstWrite: a start that finds no group log makes
// none; the first write creates it, and a failed creation keeps the
// frames for the next write instead of failing every later one.
func TestGroupLogCreatedByFirstWrite(t *testing.T) {
	efs := errorfs.Wrap(memFS(t))
	path := filepath.Join("/data", groupLogFile)
	for range 2 {
		openTestGroups(t, efs, 0).Close()
		if _, err := efs.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a start without groups made the log: %v", err)
		}
	}
	g := openTestGroups(t, efs, 0)
	efs.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: groupLogFile, Count: 1})
	commit := func(p int32) error {
		_, err := g.CommitOffsets(CommitRequest{Group: "g", Generation: -1,
			Offsets: map[TopicPartition]OffsetAndMetadata{{Topic: "t", Partition: p}: {Offset: 5, LeaderEpoch: -1}}})
		return err
	}
	if err := commit(0); !errors.Is(err, ErrCoordinatorNotAvailable) {
		t.Fatalf("commit with the creation's fsync failing: %v", err)
	}
	if _, err := efs.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed creation left the log: %v", err)
	}
	if err := commit(1); err != nil {
		t.Fatalf("commit after a failed creation: %v", err)
	}
	g.Close()
	g = openTestGroups(t, efs, 0)
	defer g.Close()
	// The failed commit's frame was kept and written with the next one:
	// the coordinator's memory already held it, so the file agrees with
	// what the broker answered from before the restart.
	offs := g.ListGroupOffsets("g")
	if offs[TopicPartition{Topic: "t", Partition: 0}].Offset != 5 || offs[TopicPartition{Topic: "t", Partition: 1}].Offset != 5 {
		t.Fatalf("after reopen: %v", offs)
	}
}

// TestGroupLogBadHeader: a foreign file is an error, not silently replaced.
func TestGroupLogBadHeader(t *testing.T) {
	fs := memFS(t)
	if err := vfs.WriteFileAtomic(fs, "/data", filepath.Join("/data", groupLogFile), []byte("XXXXXXXXXXXX")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenGroups(GroupsOptions{FS: fs, Dir: "/data"}); !errors.Is(err, ErrGroupLogCorrupt) {
		t.Fatalf("open with a bad header: %v", err)
	}
}

// FuzzDecodeGroupRecord: no input makes the decoder panic.
func FuzzDecodeGroupRecord(f *testing.F) {
	for _, r := range []record{
		{typ: recOffsetCommit, group: "g", tp: TopicPartition{"t", 1}, offset: OffsetAndMetadata{Offset: 5, Metadata: "m"}},
		{typ: recGroupMetadata, group: "g", meta: &groupMetadata{members: []memberMetadata{{id: "a", subscription: []byte{1}}}}},
		{typ: recTxnComplete, producerID: 4, commit: true},
	} {
		f.Add(appendFrame(nil, &r)[frameHeaderLen:])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		decodeRecord(body)
	})
}

// slowSyncFS counts fsyncs of the group log and makes each take a while,
// as a disk does.
type slowSyncFS struct {
	vfs.FS
	mu    sync.Mutex
	syncs int
}

type slowSyncFile struct {
	vfs.File
	fs *slowSyncFS
}

func (s *slowSyncFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := s.FS.OpenFile(name, flag, perm)
	if err != nil || filepath.Base(name) != groupLogFile {
		return f, err
	}
	return &slowSyncFile{File: f, fs: s}, nil
}

func (f *slowSyncFile) Sync() error {
	time.Sleep(2 * time.Millisecond)
	f.fs.mu.Lock()
	f.fs.syncs++
	f.fs.mu.Unlock()
	return f.File.Sync()
}

// TestGroupLogSharesFsyncs: concurrent commits share fsyncs (group
// commit) instead of taking one each.
func TestGroupLogSharesFsyncs(t *testing.T) {
	fs := &slowSyncFS{FS: memFS(t)}
	g := openTestGroups(t, fs, 0)
	defer g.Close()
	const writers, commits = 16, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range commits {
				if _, err := g.CommitOffsets(CommitRequest{Group: fmt.Sprint("g", w), Generation: -1,
					Offsets: map[TopicPartition]OffsetAndMetadata{{Topic: "t"}: {Offset: int64(i)}}}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.syncs*2 > writers*commits {
		t.Fatalf("%d fsyncs for %d concurrent commits: not shared", fs.syncs, writers*commits)
	}
	t.Logf("%d fsyncs for %d commits", fs.syncs, writers*commits)
}

// TestGroupLogUnsyncedIsLost is the negative control for the crash test:
// records queued but not yet fsynced (what a commit answered before its
// fsync would have acknowledged) do not survive a crash.
func TestGroupLogUnsyncedIsLost(t *testing.T) {
	fs := memFS(t)
	g, err := OpenGroups(GroupsOptions{FS: fs, Dir: "/data", TickInterval: time.Hour}) // no background flush
	if err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	g.core.CommitOffsets(time.Now(), CommitRequest{Group: "g", Generation: -1,
		Offsets: map[TopicPartition]OffsetAndMetadata{{Topic: "t"}: {Offset: 42}}})
	g.store.append(g.core, g.core.takeRecords()) // queued, no wait
	if got := g.core.Offsets("g")[TopicPartition{Topic: "t"}].Offset; got != 42 {
		t.Fatalf("offset in memory %d", got)
	}
	crashed := fs.CrashClone()
	g.mu.Unlock()
	g.Kill()
	g2 := openTestGroups(t, crashed, 0)
	defer g2.Close()
	if offs := g2.ListGroupOffsets("g"); len(offs) != 0 {
		t.Fatalf("an offset that was never fsynced survived the crash: %v (the crash test proves nothing)", offs)
	}
}

// TestGroupLogDamagedFrame: a damaged frame in the middle of the log (a
// flipped byte, valid frames after it) loses only its own record.
func TestGroupLogDamagedFrame(t *testing.T) {
	fs := memFS(t)
	g := openTestGroups(t, fs, 0)
	for i := range 3 {
		if err := g.CommitOffsetsAdmin("g", map[TopicPartition]OffsetAndMetadata{{Topic: "t", Partition: int32(i)}: {Offset: 7}}); err != nil {
			t.Fatal(err)
		}
	}
	g.Close()
	path := filepath.Join("/data", groupLogFile)
	data, _ := vfs.ReadFile(fs, path)
	frame := (len(data) - groupLogHeaderLen) / 3
	for _, at := range []int{0, 3, 5, 9, 20} { // length, CRC, type, payload
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			damaged := append([]byte{}, data...)
			damaged[groupLogHeaderLen+frame+at] ^= 0x5a
			if err := vfs.WriteFileAtomic(fs, "/data", path, damaged); err != nil {
				t.Fatal(err)
			}
			g := openTestGroups(t, fs, 0)
			defer g.Close()
			offs := g.ListGroupOffsets("g")
			if _, lost := offs[TopicPartition{Topic: "t", Partition: 1}]; lost || len(offs) != 2 {
				t.Fatalf("after damaging frame 2 at byte %d: %v, want partitions 0 and 2", at, offs)
			}
		})
	}
}

// FuzzScanGroupLog: any file content after the header scans without a
// panic, and the valid end never passes the data.
func FuzzScanGroupLog(f *testing.F) {
	var seed []byte
	for i := range goldenGroupRecords {
		seed = appendFrame(seed, &goldenGroupRecords[i])
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Fuzz(func(t *testing.T, tail []byte) {
		data := append(groupLogHeader(), tail...)
		end, damaged := scanFrames(data, func(record) {})
		if end > len(data) || end < groupLogHeaderLen {
			t.Fatalf("end %d of %d", end, len(data))
		}
		for _, d := range damaged {
			if d.From >= d.To || d.To > end {
				t.Fatalf("bad damaged range %+v (end %d)", d, end)
			}
		}
	})
}

// TestGroupNamesTooLongToPersist: names the group log cannot encode (over
// 32767 bytes; flexible requests can carry them) are refused, never
// written truncated.
func TestGroupNamesTooLongToPersist(t *testing.T) {
	long := strings.Repeat("x", maxNameLen+1)
	c := newGroupCore(GroupConfig{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute}, func(p string) string { return p + "-1" })
	now := time.Now()
	c.Join(now, JoinRequest{Group: long, ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}, SessionTimeout: 10 * time.Second}, 1)
	c.Join(now, JoinRequest{Group: "g", InstanceID: long, ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}, SessionTimeout: 10 * time.Second}, 2)
	c.Join(now, JoinRequest{Group: "g", ProtocolType: "consumer", Protocols: []Protocol{{Name: long}}, SessionTimeout: 10 * time.Second}, 3)
	want := []error{ErrInvalidGroupID, ErrInvalidRequest, ErrInvalidRequest}
	for i, r := range c.takeReplies() {
		if r.Join.Err != want[i] {
			t.Errorf("join %d: %v, want %v", i+1, r.Join.Err, want[i])
		}
	}
	if _, err := c.CommitOffsets(now, CommitRequest{Group: long, Generation: -1}); err != ErrInvalidGroupID {
		t.Errorf("commit with a long group id: %v", err)
	}
	if errs, _ := c.CommitOffsets(now, CommitRequest{Group: "g", Generation: -1,
		Offsets: map[TopicPartition]OffsetAndMetadata{{Topic: long}: {}}}); errs[TopicPartition{Topic: long}] != ErrInvalidRequest {
		t.Errorf("commit with a long topic: %v", errs)
	}
	if err := c.StageTxn(now, "g", 1, 0, map[TopicPartition]OffsetAndMetadata{{Topic: long}: {}}); err != ErrInvalidRequest {
		t.Errorf("stage with a long topic: %v", err)
	}
	if recs := c.takeRecords(); len(recs) != 0 {
		t.Fatalf("records written: %d", len(recs))
	}
}
