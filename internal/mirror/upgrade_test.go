package mirror_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// TestUpgradeFromJSONFiles: a data directory as the version before the
// state logs left it (mirrors.json and mirror-sources.json beside the
// partitions, written as that version wrote them: indented JSON, the
// sources file 0600) starts with its mirror as it was, paused and
// read-only with its source settings, moves the JSON into the logs, and
// mirrors on when resumed.
func TestUpgradeFromJSONFiles(t *testing.T) {
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

	dir := c.DataDir()
	for _, f := range []struct {
		log, magic, json string
		mode             os.FileMode
	}{
		{"mirror-state.log", "MBMS", "mirrors.json", 0o644},
		{"mirror-sources.log", "MBMC", "mirror-sources.json", 0o600},
	} {
		var old bytes.Buffer
		if err := json.Indent(&old, lastDocument(t, filepath.Join(dir, f.log), f.magic), "", "  "); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.json), old.Bytes(), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(dir, f.log)); err != nil {
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
	for _, name := range []string{"mirrors.json", "mirror-sources.json"} {
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
