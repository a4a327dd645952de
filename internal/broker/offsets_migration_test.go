package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// The migration of the group log into __consumer_offsets
// (coordinator/offsets_topic_store.go), on an in-memory file system
// whose crash clone keeps only what was synced.

func memBroker(t *testing.T, dir string, fs vfs.FS, seams func(*Broker)) (*Broker, error) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = dir, "127.0.0.1:0", ""
	if err := cfg.SetPair("offsets.topic.num.partitions=3"); err != nil {
		t.Fatal(err)
	}
	return newBroker(Options{Config: cfg, FS: fs}, seams)
}

var migrationGroups = []string{"g-a", "g-b", "g-c", "g-d"}

func migrationOffsets(group string) map[coordinator.TopicPartition]coordinator.OffsetAndMetadata {
	out := map[coordinator.TopicPartition]coordinator.OffsetAndMetadata{}
	for p := range int32(3) {
		out[coordinator.TopicPartition{Topic: "orders", Partition: p}] = coordinator.OffsetAndMetadata{
			Offset: int64(10*len(group)) + int64(p), LeaderEpoch: -1, Metadata: group}
	}
	return out
}

// legacyDataDir writes a data dir as the version before the topic was
// the store did: committed offsets of four groups and offsets staged by
// producer 7's open transaction, in the group log.
func legacyDataDir(t *testing.T, dir string) *errorfs.MemFS {
	t.Helper()
	mem := errorfs.NewMem()
	b, err := memBroker(t, dir, mem, func(b *Broker) { b.knobs.legacyGroupLog = true })
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range migrationGroups {
		if err := b.groups.CommitOffsetsAdmin(g, migrationOffsets(g)); err != nil {
			t.Fatal(err)
		}
	}
	staged := map[coordinator.TopicPartition]coordinator.OffsetAndMetadata{{Topic: "orders", Partition: 0}: {Offset: 99, LeaderEpoch: -1}}
	if err := b.groups.StageTxnOffsets("g-a", 7, 0, staged); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Stat(filepath.Join(dir, "group-log")); err != nil {
		t.Fatalf("the legacy broker wrote no group log: %v", err)
	}
	return mem
}

// checkMigrated opens fs and reports what differs from the legacy state
// (producer 7's staged offset is committed by its transaction's end).
func checkMigrated(t *testing.T, dir string, fs vfs.FS) []string {
	t.Helper()
	b, err := memBroker(t, dir, fs, nil)
	if err != nil {
		return []string{fmt.Sprintf("restart: %v", err)}
	}
	defer b.Close(context.Background())
	var bad []string
	for _, g := range migrationGroups {
		if got := b.groups.ListGroupOffsets(g); !reflect.DeepEqual(stripTS(got), migrationOffsets(g)) {
			bad = append(bad, fmt.Sprintf("%s: %v", g, got))
		}
	}
	if _, err := fs.Stat(filepath.Join(dir, "group-log")); err == nil {
		bad = append(bad, "group-log still there after the restart")
	}
	if err := b.groups.CompleteTxnOffsets(7, 0, 0, true); err != nil {
		bad = append(bad, fmt.Sprintf("completing producer 7: %v", err))
	}
	if got := b.groups.ListGroupOffsets("g-a")[coordinator.TopicPartition{Topic: "orders", Partition: 0}]; got.Offset != 99 {
		bad = append(bad, fmt.Sprintf("producer 7's staged offset after its commit: %v", got))
	}
	return bad
}

func stripTS(m map[coordinator.TopicPartition]coordinator.OffsetAndMetadata) map[coordinator.TopicPartition]coordinator.OffsetAndMetadata {
	out := map[coordinator.TopicPartition]coordinator.OffsetAndMetadata{}
	for tp, om := range m {
		om.CommitTimestamp = 0
		out[tp] = om
	}
	return out
}

// migrationCrashRun cuts the migration after each of its file operations
// in turn (every operation after the cut fails, as after a kill -9),
// takes a crash clone and starts on it. It returns the cuts whose
// restart lost state, and how many cuts there were; with firstBad it
// stops at the first cut whose restart lost state.
func migrationCrashRun(t *testing.T, removeFirst, firstBad bool) (bad []string, cuts int) {
	dir := t.TempDir()
	for cut := 0; ; cut++ {
		mem := legacyDataDir(t, dir)
		efs := errorfs.Wrap(mem)
		b, err := memBroker(t, dir, efs, func(b *Broker) {
			b.knobs.groupHooks = coordinator.TestHooks{
				MigrationStart:           func() { efs.Inject(errorfs.Rule{Skip: cut}) },
				MigrationRemovesLogFirst: removeFirst,
			}
		})
		if err == nil {
			b.Kill()
			if len(efs.Injected()) == 0 {
				return bad, cut // the migration ran to its end before the cut
			}
		}
		for _, s := range checkMigrated(t, dir, mem.CrashClone()) {
			bad = append(bad, fmt.Sprintf("cut after %d operations: %s", cut, s))
		}
		if firstBad && len(bad) > 0 {
			return bad, cut + 1
		}
	}
}

// TestOffsetsMigrationFromGroupLog: a data dir whose group log holds the
// state starts with every offset and staged transactional offset, the
// group log gone and the topic holding them (a second start reads the
// topic alone).
func TestOffsetsMigrationFromGroupLog(t *testing.T) {
	dir := t.TempDir()
	mem := legacyDataDir(t, dir)
	b, err := memBroker(t, dir, mem, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Kill()
	if bad := checkMigrated(t, dir, mem.CrashClone()); len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
}

// TestOffsetsMigrationCrash: the migration can be cut after any file
// operation and run again: the restart has every offset.
func TestOffsetsMigrationCrash(t *testing.T) {
	bad, cuts := migrationCrashRun(t, false, false)
	if len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
	t.Logf("%d cuts, each restart had the state", cuts)
}

// TestOffsetsMigrationCrashNegativeControl removes the rule (the group log
// is removed only once the topic holds its state durably) and shows a
// cut that loses offsets (the first such cut is the proof: the run stops
// there).
func TestOffsetsMigrationCrashNegativeControl(t *testing.T) {
	bad, cuts := migrationCrashRun(t, true, true)
	if len(bad) == 0 {
		t.Fatal("removing the group log first loses nothing: the migration crash test proves nothing")
	}
	t.Logf("%d cuts; removing the group log before the topic is durable:\n%s", cuts, strings.Join(bad, "\n"))
}
