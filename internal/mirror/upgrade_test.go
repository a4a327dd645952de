package mirror_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/recordlog"
	"github.com/minibroker/minibroker/minibrokertest"
)

// lastDocument is the JSON of the last record of a mirror state log
// (internal/mirror/statelog.go: header, frames of type 1 + JSON).
func lastDocument(t *testing.T, path, magic string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := recordlog.Format{Magic: magic, Version: 1, MaxRecord: 64 << 20}
	if err := f.CheckHeader(data); err != nil {
		t.Fatal(err)
	}
	var last []byte
	if _, _, err := f.Scan(data, recordlog.ScanOptions{}, func(_ int, body []byte) error {
		last = bytes.Clone(body[1:])
		return nil
	}); err != nil || last == nil {
		t.Fatalf("%s: no document (%v)", path, err)
	}
	return last
}

// TestUpgradeFromEarlierVersions: a data directory as an earlier version
// left it, the version before __mirror_state (mirror-state.log and
// mirror-sources.log beside the partitions, "log") or the one before the
// state logs (mirrors.json and mirror-sources.json, written as that
// version wrote them: indented JSON, the sources file 0600, "json"),
// starts with its mirror as it was, paused and read-only with its source
// settings, moves the state into __mirror_state (the old state file
// removed, the sources into mirror-sources.log), and mirrors on when
// resumed.
func TestUpgradeFromEarlierVersions(t *testing.T) {
	for _, from := range []string{"log", "json"} {
		t.Run(from, func(t *testing.T) { upgradeFrom(t, from) })
	}
}

func upgradeFrom(t *testing.T, from string) {
	src := minibrokertest.Start(t, minibrokertest.Topic("orders", 2))
	produce(t, src.Addr(), "orders", 10)
	c := minibrokertest.Start(t)
	if err := c.Broker().Mirrors().CreateWith("m", []string{src.Addr()},
		mirror.CreateOptions{SourceConfig: map[string]string{"security.protocol": "PLAINTEXT"}}); err != nil {
		t.Fatal(err)
	}
	m := c.Mirror("m").Start("orders")
	m.WaitCaughtUp(10 * time.Second)
	m.Pause()
	before := map[int32]int64{}
	for _, p := range m.Status().Partitions {
		before[p.Partition] = p.LocalLogEndOffset
	}
	c.Close()

	// The state as the earlier version kept it, and __mirror_state emptied
	// (that version had none).
	dir := c.DataDir()
	stateDir := filepath.Join(dir, mirror.StateTopicName+"-0")
	p, err := partition.Open(stateDir, mirror.StateTopicName, 0, partition.Config{Log: mlog.DefaultConfig()}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	state, err := mirror.StateDocument(mirror.PartitionStateTopic(p, nil))
	p.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(stateDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if from == "log" {
		data := append([]byte("MBMS\x00\x01\x00\x00"), recordlog.AppendFrame(nil, append([]byte{1}, state...))...)
		if err := os.WriteFile(filepath.Join(dir, "mirror-state.log"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		for _, f := range []struct {
			json string
			doc  []byte
			mode os.FileMode
		}{
			{"mirrors.json", state, 0o644},
			{"mirror-sources.json", lastDocument(t, filepath.Join(dir, "mirror-sources.log"), "MBMC"), 0o600},
		} {
			var old bytes.Buffer
			if err := json.Indent(&old, f.doc, "", "  "); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f.json), old.Bytes(), f.mode); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Remove(filepath.Join(dir, "mirror-sources.log")); err != nil {
			t.Fatal(err)
		}
	}

	c.Revive()
	st := m.Status()
	if len(st.Partitions) != 2 || fmt.Sprint(st.SourceConfig) != "map[security.protocol:PLAINTEXT]" {
		t.Fatalf("after the upgrade: %d partitions, source config %v", len(st.Partitions), st.SourceConfig)
	}
	for _, p := range st.Partitions {
		if p.State != mirror.Paused || p.LocalLogEndOffset != before[p.Partition] {
			t.Fatalf("after the upgrade: %+v, want PAUSED at %d", p, before[p.Partition])
		}
		part, _ := c.Broker().Partition("orders", p.Partition)
		if mode, owner := part.Mode(); mode != partition.Mirrored || owner != "m" {
			t.Fatal("paused partition writable after the upgrade")
		}
	}
	for _, name := range []string{"mirrors.json", "mirror-sources.json", "mirror-state.log"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Fatalf("%s after the upgrade: %v", name, err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "mirror-sources.log"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mirror-sources.log after the upgrade: %v %v", fi, err)
	}
	produce(t, src.Addr(), "orders", 10)
	m.Resume()
	m.WaitCaughtUp(10 * time.Second)
	c.Restart()
	if st := m.Status(); len(st.Partitions) != 2 || st.Partitions[0].State != mirror.Mirroring {
		t.Fatalf("after a restart on the upgraded directory: %+v", st.Partitions)
	}
}
