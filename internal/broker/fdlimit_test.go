package broker

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// A broker out of file descriptors: every open fails with EMFILE. Here
// errorfs injects EMFILE into chosen opens; test/integration's
// TestFileLimitBinary runs the built binary under a real RLIMIT_NOFILE.

func newErrorFSBroker(t *testing.T, dir string) (*Broker, *errorfs.FS) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = dir, "127.0.0.1:0", ""
	e := errorfs.Wrap(vfs.Default)
	b, err := New(Options{Config: cfg, FS: e})
	if err != nil {
		t.Fatal(err)
	}
	return b, e
}

// partitionDirs lists the directories of topic's partitions in dir.
func partitionDirs(t *testing.T, dir, topic string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), topic+"-") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// A CreateTopics that runs out of files part-way answers
// KAFKA_STORAGE_ERROR and leaves nothing: no topic, no partition
// directory (a later topic of the same name would have found them, the
// one that failed half-written); the same topic is created once files
// are available.
func TestCreateTopicOutOfFilesLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	b, e := newErrorFSBroker(t, dir)
	defer closeBroker(t, b)
	e.Inject(errorfs.Rule{Op: errorfs.OpOpen, PathContains: filepath.Join("big-3", "00000000000000000000.log"), Err: syscall.EMFILE})
	_, err := b.CreateTopic("big", 6, nil, [16]byte{}, false)
	if errorCode(err) != kerr.KafkaStorageError.Code {
		t.Fatalf("CreateTopic out of files: %v (code %d)", err, errorCode(err))
	}
	if _, ok := b.Topic("big"); ok {
		t.Fatal("the failed topic is registered")
	}
	if left := partitionDirs(t, dir, "big"); len(left) > 0 {
		t.Fatalf("the failed CreateTopic left %v", left)
	}
	e.Clear()
	if _, err := b.CreateTopic("big", 6, nil, [16]byte{}, false); err != nil {
		t.Fatalf("CreateTopic once files are available: %v", err)
	}
	if got := len(partitionDirs(t, dir, "big")); got != 6 {
		t.Fatalf("%d partition directories, want 6", got)
	}
}

// CreatePartitions out of files, opening a partition or writing
// topics.json, answers KAFKA_STORAGE_ERROR and leaves the topic as it was,
// in memory, in topics.json and on disk. Before, a failed topics.json
// write kept the new partitions open and served: their records were
// acknowledged, and gone from the topic after a restart.
func TestAddPartitionsOutOfFilesLeavesTopicAsItWas(t *testing.T) {
	dir := t.TempDir()
	b, e := newErrorFSBroker(t, dir)
	if _, err := b.CreateTopic("t", 2, nil, [16]byte{}, false); err != nil {
		t.Fatal(err)
	}
	for _, fail := range []string{filepath.Join("t-4", "00000000000000000000.log"), topicsFile + ".tmp"} {
		e.Inject(errorfs.Rule{Op: errorfs.OpOpen, PathContains: fail, Count: 1, Err: syscall.EMFILE})
		err := b.AddPartitions("t", 6, false)
		if errorCode(err) != kerr.KafkaStorageError.Code {
			t.Fatalf("%s failing: AddPartitions: %v (code %d)", fail, err, errorCode(err))
		}
		if n := len(b.partitionsOf("t")); n != 2 {
			t.Fatalf("%s failing: the topic has %d partitions after the failed AddPartitions, want 2", fail, n)
		}
		if got := partitionDirs(t, dir, "t"); len(got) != 2 {
			t.Fatalf("%s failing: partition directories %v, want t-0 and t-1", fail, got)
		}
		e.Clear()
	}
	closeBroker(t, b)
	b, _ = newErrorFSBroker(t, dir)
	defer closeBroker(t, b)
	if n := len(b.partitionsOf("t")); n != 2 {
		t.Fatalf("after a restart: %d partitions, want 2", n)
	}
	if err := b.AddPartitions("t", 6, false); err != nil {
		t.Fatalf("AddPartitions once files are available: %v", err)
	}
}

// A DeleteTopics whose topics.json write fails answers KAFKA_STORAGE_ERROR
// and leaves the topic as it was: registered and served, its files open
// and on disk, as topics.json still lists it. Before, the topic left
// memory with its partitions' files open (until a restart, which brought
// it back).
func TestDeleteTopicOutOfFilesLeavesTopicAsItWas(t *testing.T) {
	dir := t.TempDir()
	b, e := newErrorFSBroker(t, dir)
	defer closeBroker(t, b)
	if _, err := b.CreateTopic("t", 2, nil, [16]byte{}, false); err != nil {
		t.Fatal(err)
	}
	e.Inject(errorfs.Rule{Op: errorfs.OpOpen, PathContains: topicsFile + ".tmp", Count: 1, Err: syscall.EMFILE})
	err := b.DeleteTopic("t")
	if errorCode(err) != kerr.KafkaStorageError.Code {
		t.Fatalf("DeleteTopic with topics.json failing: %v (code %d)", err, errorCode(err))
	}
	if _, ok := b.Topic("t"); !ok {
		t.Fatal("the topic is gone after the failed DeleteTopic")
	}
	parts := b.partitionsOf("t")
	if len(parts) != 2 || len(partitionDirs(t, dir, "t")) != 2 {
		t.Fatalf("%d partitions, directories %v after the failed DeleteTopic", len(parts), partitionDirs(t, dir, "t"))
	}
	if _, err := parts[0].Read(0, 1<<20, true, false); err != nil {
		t.Fatalf("the kept topic's partition is not served: %v", err)
	}
	if err := b.DeleteTopic("t"); err != nil {
		t.Fatalf("DeleteTopic once files are available: %v", err)
	}
	if _, ok := b.Topic("t"); ok || len(partitionDirs(t, dir, "t")) != 0 {
		t.Fatal("the topic is still there after DeleteTopic")
	}
}
