package broker

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/share"
	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// The migration of the share state files into __share_group_state
// (share_state_topic.go), on an in-memory file system whose crash clone
// keeps only what was synced.

func shareMemBroker(t *testing.T, dir string, fs vfs.FS, seams func(*Broker)) (*Broker, error) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = dir, "127.0.0.1:0", ""
	for _, kv := range []string{"offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1",
		"share.coordinator.state.topic.num.partitions=3"} {
		if err := cfg.SetPair(kv); err != nil {
			t.Fatal(err)
		}
	}
	return newBroker(Options{Config: cfg, FS: fs}, seams)
}

// legacyShareStates are the share partitions the files hold: four
// groups, two partitions each, with acknowledged, archived and
// available records and delivery counts.
func legacyShareStates() map[string]map[share.TP]share.Snapshot {
	out := map[string]map[share.TP]share.Snapshot{}
	for i, g := range []string{"sg-a", "sg-b", "sg-c", "sg-d"} {
		out[g] = map[share.TP]share.Snapshot{}
		for p := range int32(2) {
			start := int64(10*i) + int64(p)
			out[g][share.TP{Topic: [16]byte{9, byte(i)}, Partition: p}] = share.Snapshot{Start: start, Batches: []share.StateBatch{
				{First: start, Last: start, State: share.Available, Count: 2},
				{First: start + 1, Last: start + 3, State: share.Acknowledged, Count: 1},
				{First: start + 4, Last: start + 4, State: share.Archived, Count: 5},
				{First: start + 5, Last: start + 6, State: share.Available, Count: 1},
			}}
		}
	}
	return out
}

// legacyShareDataDir writes the share state files as an older
// minibroker kept them.
func legacyShareDataDir(t *testing.T, dir string) *errorfs.MemFS {
	t.Helper()
	mem := errorfs.NewMem()
	fs := share.FileStore{FS: mem, Dir: filepath.Join(dir, shareStateDir)}
	for g, parts := range legacyShareStates() {
		for tp, s := range parts {
			if err := fs.Save(g, tp, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	return mem
}

// checkShareMigrated opens fs and reports what differs from the files'
// state.
func checkShareMigrated(t *testing.T, dir string, fs vfs.FS) []string {
	t.Helper()
	b, err := shareMemBroker(t, dir, fs, nil)
	if err != nil {
		return []string{fmt.Sprintf("restart: %v", err)}
	}
	defer b.Kill()
	var bad []string
	for g, parts := range legacyShareStates() {
		for tp, want := range parts {
			got, ok := b.shareStore.State(g, tp)
			if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
				bad = append(bad, fmt.Sprintf("%s %v: %v (stored %v), want %v", g, tp, got, ok, want))
			}
		}
		offs, _ := b.shares.Offsets(g, func(share.TP) (int64, bool) { return 0, false })
		for tp, want := range parts {
			if offs[tp].Start != want.Start {
				bad = append(bad, fmt.Sprintf("%s %v: share coordinator start %d, want %d", g, tp, offs[tp].Start, want.Start))
			}
		}
	}
	if _, err := fs.Stat(filepath.Join(dir, shareStateDir)); err == nil {
		bad = append(bad, shareStateDir+" still there after the restart")
	}
	return bad
}

// shareMigrationCrashRun cuts the migration after each of its file
// operations in turn (every operation after the cut fails, as after a
// kill -9), takes a crash clone and starts on it. It returns the cuts
// whose restart lost state, and how many cuts there were.
func shareMigrationCrashRun(t *testing.T, removeFirst bool) (bad []string, cuts int) {
	dir := t.TempDir()
	for cut := 0; ; cut++ {
		if cut > 2000 {
			t.Fatal("the migration still cut after 2000 operations")
		}
		mem := legacyShareDataDir(t, dir)
		efs := errorfs.Wrap(mem)
		b, err := shareMemBroker(t, dir, efs, func(b *Broker) {
			b.knobs.shareMigration = shareMigrationSeams{start: func() { efs.Inject(errorfs.Rule{Skip: cut}) }, removeFirst: removeFirst}
		})
		if err == nil {
			b.Kill()
			if len(efs.Injected()) == 0 {
				return bad, cut // the migration ran to its end before the cut
			}
		}
		for _, s := range checkShareMigrated(t, dir, mem.CrashClone()) {
			bad = append(bad, fmt.Sprintf("cut after %d operations: %s", cut, s))
		}
	}
}

// TestShareStateMigration: a data dir whose share state is in the files
// starts with every share partition's state in the topic, the files gone
// (a second start reads the topic alone).
func TestShareStateMigration(t *testing.T) {
	dir := t.TempDir()
	mem := legacyShareDataDir(t, dir)
	b, err := shareMemBroker(t, dir, mem, nil)
	if err != nil {
		t.Fatal(err)
	}
	if snaps, _ := b.shareStore.Written(); snaps != 8 {
		t.Errorf("the migration wrote %d snapshots, want 8", snaps)
	}
	b.Kill()
	if bad := checkShareMigrated(t, dir, mem.CrashClone()); len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
}

// TestShareStateMigrationCrash: the migration can be cut after any file
// operation and run again: the restart has every share partition's state.
func TestShareStateMigrationCrash(t *testing.T) {
	bad, cuts := shareMigrationCrashRun(t, false)
	if len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
	if cuts < 10 {
		t.Fatalf("only %d cuts: the migration did not run", cuts)
	}
	t.Logf("%d cuts, each restart had the state", cuts)
}

// TestShareStateMigrationCrashNegativeControl removes the rule (the
// files are removed only once the topic holds their state durably) and
// shows a cut that loses state.
func TestShareStateMigrationCrashNegativeControl(t *testing.T) {
	bad, cuts := shareMigrationCrashRun(t, true)
	if len(bad) == 0 {
		t.Fatal("removing the files first loses nothing: the migration crash test proves nothing")
	}
	t.Logf("%d cuts; removing the files before the topic is durable: %d lost, first: %s", cuts, len(bad), bad[0])
}
