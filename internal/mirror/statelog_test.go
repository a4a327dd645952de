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

	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/partition"
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

// stateTopic opens __mirror_state-0 in dir on fs, as the broker does at
// start-up (closed at the test's end).
func stateTopic(t *testing.T, fs vfs.FS, dir string) *partitionTopic {
	t.Helper()
	p, err := partition.Open(filepath.Join(dir, StateTopicName+"-0"), StateTopicName, 0,
		partition.Config{Log: mlog.DefaultConfig(), Compacted: true}, partition.Options{FS: fs})
	must(t, err)
	pt := &partitionTopic{p: p}
	pt.reopen = func() (*partition.Partition, error) {
		pt.p.Close()
		return partition.Open(filepath.Join(dir, StateTopicName+"-0"), StateTopicName, 0,
			partition.Config{Log: mlog.DefaultConfig(), Compacted: true}, partition.Options{FS: fs})
	}
	t.Cleanup(func() { pt.p.Close() })
	return pt
}

// openAt opens the store of dir on fs, its state topic included.
func openAt(t *testing.T, fs vfs.FS, dir string) (*store, *doc, []string, error) {
	t.Helper()
	return openStore(fs, dir, stateTopic(t, fs, dir))
}

// oldStateLog is mirror-state.log as the previous version wrote it: the
// header and one frame holding the document.
func oldStateLog(t *testing.T, d *doc) []byte {
	t.Helper()
	raw, err := encodeDoc(d)
	must(t, err)
	return append([]byte("MBMS\x00\x01\x00\x00"), recordlog.AppendFrame(nil, append([]byte{docRecordType}, raw...))...)
}

// TestMirrorLogsGolden pins the bytes of the sources log and of the state
// log the previous version wrote, and reads both back through openStore:
// files written by an earlier build stay readable (the state log's is
// moved to __mirror_state). Regenerate with MINIBROKER_UPDATE_GOLDEN=1
// after an intended format change, and bump docLogVersion (or the
// documents' own versions).
func TestMirrorLogsGolden(t *testing.T) {
	d := goldenDoc()
	sources, err := encodeSourceConfigs(d)
	must(t, err)
	mem := memDir(t)
	for _, f := range []struct {
		golden, file string
		data         []byte
	}{
		{"mirror-state.golden.hex", mirrorStateFile, oldStateLog(t, d)},
		{"mirror-sources.golden.hex", mirrorSourcesFile, append([]byte("MBMC\x00\x01\x00\x00"), recordlog.AppendFrame(nil, append([]byte{docRecordType}, sources...))...)},
	} {
		checkGolden(t, f.golden, f.data)
		must(t, vfs.WriteFileAtomic(mem, "/d", filepath.Join("/d", f.file), f.data))
	}
	st, got, _, err := openAt(t, mem, "/d")
	must(t, err)
	defer st.close()
	if !reflect.DeepEqual(got, goldenDoc()) {
		t.Fatalf("read back:\n%s\nwant\n%s", dump(got), dump(goldenDoc()))
	}
}

// TestMirrorStateRecordsGolden pins the batch of __mirror_state records
// the golden document is saved as (timestamp 0, before the partition
// gives it its offset and leader epoch).
func TestMirrorStateRecordsGolden(t *testing.T) {
	recs := &recordingTopic{}
	st := &topicState{t: recs, view: map[string]string{}}
	must(t, st.save(goldenDoc()))
	checkGolden(t, "mirror-state-topic.golden.hex", stateBatch(recs.appended[0], 0))
}

func checkGolden(t *testing.T, golden string, data []byte) {
	t.Helper()
	path := filepath.Join("testdata", golden)
	if os.Getenv("MINIBROKER_UPDATE_GOLDEN") == "1" {
		must(t, os.WriteFile(path, []byte(hex.Dump(data)), 0o644))
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with MINIBROKER_UPDATE_GOLDEN=1)", err)
	}
	if got := hex.Dump(data); got != string(want) {
		t.Fatalf("%s changed (bump the version; regenerate with MINIBROKER_UPDATE_GOLDEN=1):\n got:\n%s\nwant:\n%s", golden, got, want)
	}
}

// recordingTopic keeps what is appended, in memory.
type recordingTopic struct{ appended [][]StateRecord }

func (r *recordingTopic) Append(recs []StateRecord) error {
	r.appended = append(r.appended, recs)
	return nil
}

func (r *recordingTopic) Replay(fn func(key, value []byte)) error {
	for _, recs := range r.appended {
		for _, kv := range recs {
			fn(kv.Key, kv.Value)
		}
	}
	return nil
}

// A save writes only the records that changed: one partition's record for
// a change of its state, the definition for a change of the mirror's, and
// tombstones for everything of a mirror deleted; read back, the records
// are the document.
func TestMirrorStateSavesDiffs(t *testing.T) {
	recs := &recordingTopic{}
	st := &topicState{t: recs, view: map[string]string{}}
	d := goldenDoc()
	d.Mirrors[0].Topics["orders"].Partitions[1] = &partitionRecord{State: Mirroring, LastMirroredOffset: -1, BarrierOffset: -1}
	must(t, st.save(d))
	if n := len(recs.appended[0]); n != 3 {
		t.Fatalf("first save: %d records, want 3 (definition, 2 partitions)", n)
	}
	d.Mirrors[0].Topics["orders"].Partitions[1].State = Paused
	must(t, st.save(d))
	must(t, st.save(d))
	d.Mirrors[0].Config[SettingGroupsInclude] = "app.*"
	must(t, st.save(d))
	if len(recs.appended) != 3 || len(recs.appended[1]) != 1 || len(recs.appended[2]) != 1 {
		t.Fatalf("saves wrote %d batches, want 3 of 3, 1 and 1 records", len(recs.appended))
	}
	_, back, err := loadTopicState(recs)
	must(t, err)
	back.Mirrors[0].SourceConfig = d.Mirrors[0].SourceConfig
	if !reflect.DeepEqual(back, d) {
		t.Fatalf("read back:\n%s\nwant\n%s", dump(back), dump(d))
	}
	d.Mirrors = nil
	must(t, st.save(d))
	last := recs.appended[len(recs.appended)-1]
	for _, r := range last {
		if r.Value != nil {
			t.Fatalf("delete wrote a record with a value: %x", r.Key)
		}
	}
	if len(last) != 3 {
		t.Fatalf("delete wrote %d tombstones, want 3", len(last))
	}
	if _, back, _ = loadTopicState(recs); len(back.Mirrors) != 0 {
		t.Fatalf("after the delete: %s", dump(back))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
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

// crashRun saves the document 60 times, the marker i in the i-th, to
// __mirror_state on a memory file system; after each save it takes a
// torn crash clone (synced bytes kept, plus a random part of the unsynced
// tail) and reads it back. It returns how many clones lost the last
// saved document.
func crashRun(t *testing.T, skipSync bool) (lost int) {
	mem := memDir(t)
	topic := stateTopic(t, mem, "/d")
	topic.knobs.stateSkipSync = skipSync
	st, d, _, err := openStore(mem, "/d", topic)
	must(t, err)
	defer st.close()
	d.Mirrors = goldenDoc().Mirrors
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range int64(60) {
		d.Mirrors[0].Topics["orders"].Partitions[0].LastMirroredOffset = i
		must(t, st.saveDoc(d))
		clone := mem.TornCrashClone(rng)
		cst, cd, _, err := openAt(t, clone, "/d")
		must(t, err)
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
		// fsync): a clone keeps the batch whole or not at all.
		topic.knobs.stateSkipSync = true
		d.Mirrors[0].Topics["orders"].Partitions[0].LastMirroredOffset = 1000
		must(t, st.saveDoc(d))
		for range 20 {
			cst, cd, _, err := openAt(t, mem.TornCrashClone(rng), "/d")
			must(t, err)
			if got := offsetOf(cd); got != 59 && got != 1000 {
				t.Errorf("a crash during a save's write reads offset %d, want 59 (or 1000)", got)
			}
			cst.close()
		}
	}
	return lost
}

// TestMirrorStateCrash: after a crash at any point between saves, the
// state read back from __mirror_state is the last saved document (every
// save is fsynced before it returns); a batch cut by the crash is cut off
// whole.
func TestMirrorStateCrash(t *testing.T) {
	if lost := crashRun(t, false); lost != 0 {
		t.Fatalf("%d of 60 crashes lost the last saved state", lost)
	}
}

// TestMirrorStateCrashNegativeControl removes the rule (a save waits for
// its fsync) and shows saved states lost in crashes.
func TestMirrorStateCrashNegativeControl(t *testing.T) {
	lost := crashRun(t, true)
	if lost == 0 {
		t.Fatal("no state lost without the fsync: the crash test proves nothing")
	}
	t.Logf("without the fsync, %d of 60 crashes lost the last saved state", lost)
}

// A failed fsync takes __mirror_state's log offline for writes (as any
// partition's): the save answers the error; the next save reopens the
// partition (recovering it from the disk) and goes on, and a crash after
// it reads that save's state.
func TestMirrorStateSaveAfterFailedSync(t *testing.T) {
	mem := memDir(t)
	efs := errorfs.Wrap(mem)
	st, d, _, err := openAt(t, efs, "/d")
	must(t, err)
	defer st.close()
	d.Mirrors = goldenDoc().Mirrors
	must(t, st.saveDoc(d))
	efs.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: StateTopicName, Count: 1})
	d.Mirrors[0].Topics["orders"].Partitions[0].LastMirroredOffset = 100
	if err := st.saveDoc(d); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("save with a failing fsync: %v", err)
	}
	if !st.stateUnknown() {
		t.Fatal("a failed save leaves the state known")
	}
	d.Mirrors[0].Topics["orders"].Partitions[0].LastMirroredOffset = 101
	must(t, st.saveDoc(d))
	d.Mirrors[0].Topics["orders"].Partitions[0].LastMirroredOffset = 102
	must(t, st.saveDoc(d))
	cst, cd, _, err := openAt(t, mem.CrashClone(), "/d")
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
	st, d, _, err := openAt(t, mem, "/d")
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

// TestMirrorStateUpgrade: a data directory of either earlier version (the
// two JSON files; the state log and the sources log) is read into
// __mirror_state and the sources log, the old state files removed, and
// the upgraded directory reads back the same; on the real file system
// the sources log is 0600.
func TestMirrorStateUpgrade(t *testing.T) {
	for _, from := range []string{"json", "log"} {
		t.Run(from, func(t *testing.T) {
			dir := t.TempDir()
			writeOld(t, from, vfs.Default, dir)
			st, d, notes, err := openAt(t, vfs.Default, dir)
			must(t, err)
			if !reflect.DeepEqual(d, goldenDoc()) {
				t.Fatalf("upgraded:\n%s\nwant\n%s", dump(d), dump(goldenDoc()))
			}
			t.Logf("notes: %q", notes)
			must(t, st.close())
			for _, f := range []string{legacyMirrorsFile, legacySourcesFile, mirrorStateFile} {
				if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s after the upgrade: %v", f, err)
				}
			}
			fi, err := os.Stat(filepath.Join(dir, mirrorSourcesFile))
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("%s: %v %v, want mode 0600", mirrorSourcesFile, fi.Mode(), err)
			}
			st, d, _, err = openAt(t, vfs.Default, dir)
			must(t, err)
			defer st.close()
			if !reflect.DeepEqual(d, goldenDoc()) {
				t.Fatalf("reopened:\n%s\nwant\n%s", dump(d), dump(goldenDoc()))
			}
		})
	}
}

// writeOld writes the golden state as an earlier version left it: "json"
// the two JSON files, "log" mirror-state.log and mirror-sources.log.
func writeOld(t *testing.T, from string, fs vfs.FS, dir string) {
	t.Helper()
	if from == "json" {
		writeLegacy(t, fs, dir, goldenDoc())
		return
	}
	must(t, vfs.WriteFileAtomic(fs, dir, filepath.Join(dir, mirrorStateFile), oldStateLog(t, goldenDoc())))
	raw, err := encodeSourceConfigs(goldenDoc())
	must(t, err)
	must(t, vfs.WriteFileAtomicPrivate(fs, dir, filepath.Join(dir, mirrorSourcesFile),
		append([]byte("MBMC\x00\x01\x00\x00"), recordlog.AppendFrame(nil, append([]byte{docRecordType}, raw...))...)))
}

// upgradeCrashRun cuts the upgrade after each of its file operations in
// turn (every operation after the cut fails, as after a crash), and
// starts again on what a crash then leaves: a power loss (a crash clone:
// what was synced) and a kill -9 (everything written). It returns the
// cuts whose restart did not read the old state back, or left an old
// state file behind.
func upgradeCrashRun(t *testing.T, from string, k knobs) (bad []string, cuts int) {
	for cut := 0; ; cut++ {
		mem := memDir(t)
		writeOld(t, from, mem, "/d")
		efs := errorfs.Wrap(mem)
		efs.Inject(errorfs.Rule{Skip: cut})
		p, err := partition.Open(filepath.Join("/d", StateTopicName+"-0"), StateTopicName, 0,
			partition.Config{Log: mlog.DefaultConfig(), Compacted: true}, partition.Options{FS: efs})
		if err == nil {
			st, _, _, err := openStoreWith(efs, "/d", &partitionTopic{p: p}, k)
			if err == nil {
				st.close()
			}
			p.Close()
			if err == nil && len(efs.Injected()) == 0 {
				return bad, cut // the upgrade ran to its end before the cut
			}
		}
		for _, crash := range []struct {
			name string
			fs   *errorfs.MemFS
		}{{"power loss", mem.CrashClone()}, {"kill -9", mem}} {
			st, d, _, err := openAt(t, crash.fs, "/d")
			switch {
			case err != nil:
				bad = append(bad, fmt.Sprintf("cut after %d operations, %s: restart: %v", cut, crash.name, err))
				continue
			case !reflect.DeepEqual(d, goldenDoc()):
				bad = append(bad, fmt.Sprintf("cut after %d operations, %s: restart reads %s", cut, crash.name, dump(d)))
			}
			st.close()
			for _, f := range []string{legacyMirrorsFile, legacySourcesFile, mirrorStateFile} {
				if _, err := crash.fs.Stat("/d/" + f); err == nil {
					bad = append(bad, fmt.Sprintf("cut after %d operations, %s: %s still there after the restart", cut, crash.name, f))
				}
			}
		}
	}
}

// TestMirrorStateUpgradeCrash: the upgrade from either earlier version
// can be cut after any file operation and run again: the restart, after a
// power loss or a kill -9, reads the old state and removes the old files.
func TestMirrorStateUpgradeCrash(t *testing.T) {
	for _, from := range []string{"json", "log"} {
		t.Run(from, func(t *testing.T) {
			bad, cuts := upgradeCrashRun(t, from, knobs{})
			if len(bad) > 0 {
				t.Fatal(strings.Join(bad, "\n"))
			}
			t.Logf("%d cuts, each restarted after a power loss and after a kill -9", cuts)
		})
	}
}

// TestMirrorStateUpgradeCrashNegativeControl removes the rule (an old
// file is removed only once its state is durable in the new store) and
// shows cuts that lose the state.
func TestMirrorStateUpgradeCrashNegativeControl(t *testing.T) {
	for _, from := range []string{"json", "log"} {
		t.Run(from, func(t *testing.T) {
			bad, _ := upgradeCrashRun(t, from, knobs{removeLegacyFirst: true})
			if len(bad) == 0 {
				t.Fatal("removing the old files first loses nothing: the upgrade crash test proves nothing")
			}
			t.Logf("removing the old files before the new store holds them:\n%s", strings.Join(bad, "\n"))
		})
	}
}

// While mirror-state.log is there it is the state, even over a topic
// that holds another (an earlier version ran on the upgraded directory
// and saved its own): the topic is brought to the file's state, whose
// mirrors the topic lacks added and whose extra mirrors tombstoned.
func TestMirrorStateFileWinsOverTopic(t *testing.T) {
	mem := memDir(t)
	st, d, _, err := openAt(t, mem, "/d")
	must(t, err)
	d.Mirrors = goldenDoc().Mirrors
	d.Mirrors[0].Name = "other"
	must(t, st.saveDoc(d))
	st.close()
	must(t, vfs.WriteFileAtomic(mem, "/d", filepath.Join("/d", mirrorStateFile), oldStateLog(t, goldenDoc())))
	st, d, _, err = openAt(t, mem, "/d")
	must(t, err)
	st.close()
	for range 2 { // the upgrade, then a restart from the topic alone
		d.Mirrors[0].SourceConfig = goldenDoc().Mirrors[0].SourceConfig
		if !reflect.DeepEqual(d, goldenDoc()) {
			t.Fatalf("read:\n%s\nwant\n%s", dump(d), dump(goldenDoc()))
		}
		st, d, _, err = openAt(t, mem, "/d")
		must(t, err)
		st.close()
	}
}
