package mirror

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/internal/recordlog"
	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// goldenDoc is the document in testdata/mirror-state.golden.hex and (its
// source settings) testdata/mirror-sources.golden.hex.
func goldenDoc() *doc {
	return &doc{Version: mirrorsVersion, Mirrors: []*mirrorSpec{{
		Name: "dr", Source: []string{"src:9092"}, ClientID: "mb", SourceClusterID: "c1",
		Config: map[string]string{SettingTopicsInclude: "orders.*"},
		Topics: map[string]*topicSpec{"orders": {TopicID: "000102030405060708090a0b0c0d0e0f",
			Partitions: map[int32]*partitionRecord{0: {State: Stopped, LastMirroredOffset: 7, BarrierOffset: 7}}}},
		SourceConfig: map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"},
	}}}
}

// TestMirrorLogsGolden pins the bytes of both logs and reads them back
// through openStore: files written by an earlier build stay readable.
// Regenerate with MINIBROKER_UPDATE_GOLDEN=1 after an intended format
// change, and bump docLogVersion (or the documents' own versions).
func TestMirrorLogsGolden(t *testing.T) {
	d := goldenDoc()
	state, err := encodeDoc(d)
	must(t, err)
	sources, err := encodeSourceConfigs(d)
	must(t, err)
	mem := errorfs.NewMem()
	must(t, mem.MkdirAll("/d", 0o755))
	for _, f := range []struct {
		golden, file string
		magic        string
		doc          []byte
	}{
		{"mirror-state.golden.hex", mirrorStateFile, "MBMS", state},
		{"mirror-sources.golden.hex", mirrorSourcesFile, "MBMC", sources},
	} {
		data := append([]byte(f.magic+"\x00\x01\x00\x00"), recordlog.AppendFrame(nil, append([]byte{docRecordType}, f.doc...))...)
		path := filepath.Join("testdata", f.golden)
		if os.Getenv("MINIBROKER_UPDATE_GOLDEN") == "1" {
			must(t, os.WriteFile(path, []byte(hex.Dump(data)), 0o644))
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (regenerate with MINIBROKER_UPDATE_GOLDEN=1)", err)
		}
		if got := hex.Dump(data); got != string(want) {
			t.Fatalf("%s encoding changed (bump the version; regenerate with MINIBROKER_UPDATE_GOLDEN=1):\n got:\n%s\nwant:\n%s", f.file, got, want)
		}
		must(t, vfs.WriteFileAtomic(mem, "/d", filepath.Join("/d", f.file), data))
	}
	st, got, _, err := openStore(mem, "/d")
	must(t, err)
	defer st.close()
	if !reflect.DeepEqual(got, goldenDoc()) {
		t.Fatalf("read back:\n%s\nwant\n%s", dump(got), dump(goldenDoc()))
	}
}

func dump(d *doc) string {
	b, _ := json.Marshal(d)
	var s []string
	for _, m := range d.Mirrors {
		s = append(s, fmt.Sprint(m.SourceConfig))
	}
	return string(b) + " sources " + strings.Join(s, ",")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func memDir(t *testing.T) *errorfs.MemFS {
	t.Helper()
	mem := errorfs.NewMem()
	must(t, mem.MkdirAll("/d", 0o755))
	return mem
}

// offsetOf is the marker the crash tests write: dr's orders-0's
// last_mirrored_offset (-2: no such mirror).
func offsetOf(d *doc) int64 {
	for _, m := range d.Mirrors {
		if m.Name == "dr" {
			return m.Topics["orders"].Partitions[0].LastMirroredOffset
		}
	}
	return -2
}

// crashRun saves the document 60 times, the marker i in the i-th, with
// the state log compacted every few saves; after each save it takes a
// torn crash clone (synced bytes kept, plus a random part of the unsynced
// tail) and reads it back. It returns how many clones lost the last
// saved document.
func crashRun(t *testing.T, skipSync bool) (lost int, notes []string) {
	mem := memDir(t)
	st, d, _, err := openStore(mem, "/d")
	must(t, err)
	defer st.close()
	st.state.compactBytes = 2048
	st.state.skipSync = skipSync
	d.Mirrors = goldenDoc().Mirrors
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range int64(60) {
		d.Mirrors[0].Topics["orders"].Partitions[0].LastMirroredOffset = i
		must(t, st.saveDoc(d))
		clone := mem.TornCrashClone(rng)
		cst, cd, n, err := openStore(clone, "/d")
		must(t, err)
		notes = append(notes, n...)
		if got := offsetOf(cd); got != i {
			lost++
			if lost == 1 {
				t.Logf("after a crash following save %d: the state has offset %d", i, got)
			}
		}
		cst.close()
	}
	if !skipSync {
		// One more save written but not yet fsynced when the power goes
		// (the seam stands in for a crash between the write and the
		// fsync): a clone keeps a random part of it, which is cut off as
		// a torn tail, or all of it, a valid record.
		st.state.skipSync = true
		d.Mirrors[0].Topics["orders"].Partitions[0].LastMirroredOffset = 1000
		must(t, st.saveDoc(d))
		for range 20 {
			cst, cd, n, err := openStore(mem.TornCrashClone(rng), "/d")
			must(t, err)
			notes = append(notes, n...)
			if got := offsetOf(cd); got != 59 && got != 1000 {
				t.Errorf("a crash during a save's write reads offset %d, want 59 (or 1000)", got)
			}
			cst.close()
		}
	}
	return lost, notes
}

// TestMirrorStateCrash: after a crash at any point between saves, the
// state read back is the last saved document (every save is fsynced
// before it returns), appends and compactions alike; torn tails are cut.
func TestMirrorStateCrash(t *testing.T) {
	lost, notes := crashRun(t, false)
	if lost != 0 {
		t.Fatalf("%d of 60 crashes lost the last saved state", lost)
	}
	torn := 0
	for _, n := range notes {
		if strings.Contains(n, "torn tail") {
			torn++
		}
	}
	if torn == 0 {
		t.Fatal("no clone had a torn tail: the cut is not exercised")
	}
	t.Logf("%d of 20 clones taken during an unsynced save had a torn tail cut", torn)
}

// TestMirrorStateCrashNegativeControl removes the rule (a save waits for
// its fsync) and shows saved states lost in crashes.
func TestMirrorStateCrashNegativeControl(t *testing.T) {
	lost, _ := crashRun(t, true)
	if lost == 0 {
		t.Fatal("no state lost without the fsync: the crash test proves nothing")
	}
	t.Logf("without the fsync, %d of 60 crashes lost the last saved state", lost)
}

// A failed fsync breaks the open log (recordlog refuses it from then on);
// the next save replaces the file whole and the state goes on being
// persisted, as with the JSON file it replaces.
func TestMirrorStateSaveAfterFailedSync(t *testing.T) {
	mem := memDir(t)
	efs := errorfs.Wrap(mem)
	st, d, _, err := openStore(efs, "/d")
	must(t, err)
	defer st.close()
	d.Mirrors = goldenDoc().Mirrors
	must(t, st.saveDoc(d))
	efs.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: mirrorStateFile, Count: 1})
	d.Mirrors[0].Topics["orders"].Partitions[0].LastMirroredOffset = 100
	if err := st.saveDoc(d); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("save with a failing fsync: %v", err)
	}
	d.Mirrors[0].Topics["orders"].Partitions[0].LastMirroredOffset = 101
	must(t, st.saveDoc(d))
	d.Mirrors[0].Topics["orders"].Partitions[0].LastMirroredOffset = 102
	must(t, st.saveDoc(d))
	cst, cd, _, err := openStore(mem.CrashClone(), "/d")
	must(t, err)
	defer cst.close()
	if got := offsetOf(cd); got != 102 {
		t.Fatalf("after a failed fsync and two saves, a crash keeps offset %d, want 102", got)
	}
}

// The sources log holds one record: a secret changed or a mirror deleted
// is gone from the file at once.
func TestMirrorSourcesRewritten(t *testing.T) {
	mem := memDir(t)
	st, d, _, err := openStore(mem, "/d")
	must(t, err)
	defer st.close()
	d.Mirrors = goldenDoc().Mirrors
	d.Mirrors[0].SourceConfig = map[string]string{"sasl.jaas.config": "password=\"old-secret\""}
	must(t, st.saveSources(d))
	d.Mirrors[0].SourceConfig = map[string]string{"sasl.jaas.config": "password=\"new-secret\""}
	must(t, st.saveSources(d))
	raw, err := vfs.ReadFile(mem, "/d/"+mirrorSourcesFile)
	must(t, err)
	if strings.Contains(string(raw), "old-secret") || !strings.Contains(string(raw), "new-secret") {
		t.Fatalf("sources log after a change:\n%s", hex.Dump(raw))
	}
	d.Mirrors = nil
	must(t, st.saveSources(d))
	raw, _ = vfs.ReadFile(mem, "/d/"+mirrorSourcesFile)
	if strings.Contains(string(raw), "secret") {
		t.Fatalf("sources log after the mirror's delete:\n%s", hex.Dump(raw))
	}
}

// writeLegacy writes mirrors.json and mirror-sources.json as the version
// before the logs did (json.MarshalIndent, WriteFileAtomic and
// WriteFileAtomicPrivate).
func writeLegacy(t *testing.T, fs vfs.FS, dir string, d *doc) {
	t.Helper()
	raw, err := json.MarshalIndent(d, "", "  ")
	must(t, err)
	must(t, vfs.WriteFileAtomic(fs, dir, filepath.Join(dir, legacyMirrorsFile), raw))
	sd := sourceConfigsDoc{Version: sourceConfigsVersion, Sources: map[string]map[string]string{}}
	for _, m := range d.Mirrors {
		sd.Sources[m.Name] = m.SourceConfig
	}
	raw, err = json.MarshalIndent(sd, "", "  ")
	must(t, err)
	must(t, vfs.WriteFileAtomicPrivate(fs, dir, filepath.Join(dir, legacySourcesFile), raw))
}

// TestMirrorStateUpgrade: a data directory of the previous version (the
// two JSON files) is read into the logs, the JSON files removed, and the
// upgraded directory reads back the same; on the real file system the
// sources log is 0600.
func TestMirrorStateUpgrade(t *testing.T) {
	dir := t.TempDir()
	writeLegacy(t, vfs.Default, dir, goldenDoc())
	st, d, notes, err := openStore(vfs.Default, dir)
	must(t, err)
	if !reflect.DeepEqual(d, goldenDoc()) {
		t.Fatalf("upgraded:\n%s\nwant\n%s", dump(d), dump(goldenDoc()))
	}
	t.Logf("notes: %q", notes)
	must(t, st.close())
	for _, f := range []string{legacyMirrorsFile, legacySourcesFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s after the upgrade: %v", f, err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, mirrorSourcesFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v, want mode 0600", mirrorSourcesFile, fi.Mode(), err)
	}
	st, d, _, err = openStore(vfs.Default, dir)
	must(t, err)
	defer st.close()
	if !reflect.DeepEqual(d, goldenDoc()) {
		t.Fatalf("reopened:\n%s\nwant\n%s", dump(d), dump(goldenDoc()))
	}
}

// upgradeCrashRun cuts the upgrade after each of its file operations in
// turn (every operation after the cut fails, as after a crash), takes a
// crash clone, and starts again on it. It returns the cuts whose restart
// did not read the old state back.
func upgradeCrashRun(t *testing.T, so storeOptions) (bad []string) {
	for cut := 0; ; cut++ {
		mem := memDir(t)
		writeLegacy(t, mem, "/d", goldenDoc())
		efs := errorfs.Wrap(mem)
		efs.Inject(errorfs.Rule{Skip: cut})
		st, _, _, err := openStoreWith(efs, "/d", so)
		if err == nil {
			st.close()
			if len(efs.Injected()) == 0 {
				return bad // the upgrade ran to its end before the cut
			}
		}
		clone := mem.CrashClone()
		st, d, _, err := openStore(clone, "/d")
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("cut after %d operations: restart: %v", cut, err))
			continue
		case !reflect.DeepEqual(d, goldenDoc()):
			bad = append(bad, fmt.Sprintf("cut after %d operations: restart reads %s", cut, dump(d)))
		}
		st.close()
		for _, f := range []string{legacyMirrorsFile, legacySourcesFile} {
			if _, err := clone.Stat("/d/" + f); err == nil {
				bad = append(bad, fmt.Sprintf("cut after %d operations: %s still there after the restart", cut, f))
			}
		}
	}
}

// TestMirrorStateUpgradeCrash: the upgrade can be cut anywhere and run
// again: the restart reads the old state and removes the JSON files.
func TestMirrorStateUpgradeCrash(t *testing.T) {
	if bad := upgradeCrashRun(t, storeOptions{}); len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
}

// TestMirrorStateUpgradeCrashNegativeControl removes the rule (a JSON
// file is removed only once its log is durable) and shows a cut that
// loses the state.
func TestMirrorStateUpgradeCrashNegativeControl(t *testing.T) {
	bad := upgradeCrashRun(t, storeOptions{removeLegacyFirst: true})
	if len(bad) == 0 {
		t.Fatal("removing the JSON first loses nothing: the upgrade crash test proves nothing")
	}
	t.Logf("removing the JSON before the log is written:\n%s", strings.Join(bad, "\n"))
}

// A document longer than a record holds is refused, not written: read
// back, it would be damage, and the log cut there would lose every later
// save with it.
func TestMirrorStateTooLarge(t *testing.T) {
	saved := mirrorStateFormat
	t.Cleanup(func() { mirrorStateFormat = saved })
	mirrorStateFormat.MaxRecord = 400 // the golden state is 301 bytes
	mem := memDir(t)
	st, d, _, err := openStore(mem, "/d")
	must(t, err)
	d.Mirrors = goldenDoc().Mirrors
	rec := d.Mirrors[0].Topics["orders"].Partitions[0]
	must(t, st.saveDoc(d))
	rec.LastMirroredOffset, rec.Reason = 8, strings.Repeat("x", 200)
	if err := st.saveDoc(d); err == nil || !strings.Contains(err.Error(), "over the 399 a record holds") {
		t.Errorf("saving an oversized state: %v", err)
	}
	rec.LastMirroredOffset, rec.Reason = 9, ""
	must(t, st.saveDoc(d))
	must(t, st.close())
	st, d, _, err = openStore(mem, "/d")
	must(t, err)
	defer st.close()
	if got := offsetOf(d); got != 9 {
		t.Fatalf("after a refused save and a saved one: offset %d, want 9", got)
	}
}
