package logtool

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/batch"
)

func dumpDir(t *testing.T, dir string, opts Options) (string, *Dumper) {
	t.Helper()
	var buf bytes.Buffer
	d := NewDumper(&buf, opts)
	if err := d.DumpPath(dir); err != nil {
		t.Fatal(err)
	}
	return buf.String(), d
}

func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestDumpControlRecords(t *testing.T) {
	var l logBuilder
	l.add(marker(true, 7, 2, 11))
	l.add(batch.BarrierBatch("source-uuid", testTS))
	l.add(batch.ControlBatch{Type: 9, ProducerID: -1, ProducerEpoch: -1, Timestamp: testTS, Value: []byte{1, 2, 3}}.Build())
	// A control record whose key is 2 bytes: undecodable, shown as hex.
	short := encodeRecord(kmsg.Record{Key: []byte{0, 1}, Value: []byte{0xaa}})
	l.add(finishBatch(batch.AttrControl, 1, testTS, -1, -1, -1, short))
	dir := t.TempDir()
	l.write(t, dir)
	out, d := dumpDir(t, dir, Options{})
	mustContain(t, out,
		"endTxnMarker: COMMIT coordinatorEpoch: 11",
		`mirrorPidReset: version: 0 sourceClusterId: "source-uuid"`,
		"controlType: UNKNOWN(9) key: hex:00000009 value: hex:010203",
		"controlType: UNDECODABLE key: hex:0001 value: hex:aa error: control key of 2 bytes, want 4")
	if d.Damaged != 0 {
		t.Errorf("an unknown control type is not damage: %d", d.Damaged)
	}
	js, _ := dumpDir(t, dir, Options{JSON: true})
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(js), "\n") {
		var b batchJSON
		if err := json.Unmarshal([]byte(line), &b); err != nil {
			t.Fatal(err)
		}
		if b.ControlRecord != nil {
			types = append(types, b.ControlRecord.Type)
			if b.ControlRecord.Type == "MIRROR_PID_RESET" && b.ControlRecord.MirrorPidReset.SourceClusterID != "source-uuid" {
				t.Errorf("barrier %+v", b.ControlRecord)
			}
		}
	}
	if strings.Join(types, ",") != "COMMIT,MIRROR_PID_RESET,UNKNOWN(9),UNDECODABLE" {
		t.Errorf("control types %v", types)
	}
}

func TestDumpDamage(t *testing.T) {
	var l logBuilder
	l.add(dataBatch(spec{pid: 1, seq: 0, n: 2, values: []string{"a", "b"}}))
	second := len(l.data)
	l.add(dataBatch(spec{pid: 1, seq: 2, n: 1}))
	third := len(l.data)
	l.add(dataBatch(spec{pid: 1, seq: 3, n: 1}))
	l.data[third-2] ^= 0x55 // the second batch's record bytes: CRC mismatch
	good := append([]byte(nil), l.data...)

	t.Run("crc", func(t *testing.T) {
		dir := t.TempDir()
		l.write(t, dir)
		out, d := dumpDir(t, dir, Options{PrintData: true})
		mustContain(t, out, "baseOffset: 2 lastOffset: 2", "isvalid: false", "| problem: CRC", "baseOffset: 3 lastOffset: 3")
		if d.Damaged == 0 {
			t.Error("not counted")
		}
	})
	t.Run("bad length stops the segment", func(t *testing.T) {
		l.data = append([]byte(nil), good...)
		binary.BigEndian.PutUint32(l.data[second+8:], 3)
		dir := t.TempDir()
		l.write(t, dir)
		out, _ := dumpDir(t, dir, Options{})
		mustContain(t, out, "Damage at position 77: batch length 3 is below the minimum 49 (138 bytes not read)")
		if strings.Contains(out, "baseOffset: 3") {
			t.Error("went on past unframeable bytes")
		}
	})
	t.Run("torn tail", func(t *testing.T) {
		l.data = good[:len(good)-5]
		dir := t.TempDir()
		l.write(t, dir)
		js, _ := dumpDir(t, dir, Options{JSON: true})
		mustContain(t, js, `"kind":"damage"`, `"torn_tail":true`, `"remaining_bytes":`)
	})
}

func TestDumpDeepIndexCheck(t *testing.T) {
	var l logBuilder
	l.add(dataBatch(spec{pid: 1, seq: 0, n: 2}))
	p1 := len(l.data)
	l.add(dataBatch(spec{pid: 1, seq: 2, n: 2, ts: testTS + 5}))
	dir := t.TempDir()
	l.write(t, dir)
	idx := binary.BigEndian.AppendUint32(nil, 3)
	idx = binary.BigEndian.AppendUint32(idx, uint32(p1))
	idx = binary.BigEndian.AppendUint32(idx, 3) // wrong: points into the middle of a batch
	idx = binary.BigEndian.AppendUint32(idx, uint32(p1+1))
	os.WriteFile(filepath.Join(dir, "00000000000000000000.index"), idx, 0o644)
	tidx := binary.BigEndian.AppendUint64(nil, testTS+5)
	tidx = binary.BigEndian.AppendUint32(tidx, 0) // wrong batch: its max timestamp is testTS
	os.WriteFile(filepath.Join(dir, "00000000000000000000.timeindex"), tidx, 0o644)
	out, d := dumpDir(t, dir, Options{Deep: true})
	mustContain(t, out, "offset: 3 position: 77 check: ok",
		"check: FAILED entry does not increase",
		"timestamp: 1700000000005 offset: 0 check: FAILED batch 0-1 has max timestamp 1700000000000")
	if d.DeepFailed != 2 {
		t.Errorf("deep failures %d", d.DeepFailed)
	}
}

func TestDumpSnapshotDeepMismatch(t *testing.T) {
	var l logBuilder
	l.add(dataBatch(spec{pid: 1, seq: 0, n: 2}))
	l.add(barrier())
	l.add(dataBatch(spec{pid: 2, seq: 0, n: 1}))
	dir := t.TempDir()
	l.write(t, dir)
	// A snapshot from another log: producer 1 survived the barrier.
	var other logBuilder
	other.add(dataBatch(spec{pid: 1, seq: 0, n: 2}))
	other.add(plain())
	other.add(dataBatch(spec{pid: 2, seq: 0, n: 1}))
	odir := t.TempDir()
	other.write(t, odir)
	snap := snapshotOf(t, odir, 4)
	os.WriteFile(filepath.Join(dir, "00000000000000000004.snapshot"), snap, 0o644)
	out, d := dumpDir(t, dir, Options{Deep: true})
	mustContain(t, out, "check: FAILED producer 1: in the snapshot, not in the replay")
	if d.DeepFailed != 1 {
		t.Errorf("deep failures %d:\n%s", d.DeepFailed, out)
	}
	os.WriteFile(filepath.Join(dir, "00000000000000000004.snapshot"), snapshotOf(t, dir, 4), 0o644)
	if out, d := dumpDir(t, dir, Options{Deep: true}); d.DeepFailed != 0 {
		t.Errorf("the log's own snapshot fails: %s", out)
	}
}

// A Kafka partition directory: preallocated indexes, partition.metadata,
// Kafka's own snapshot layout.
func TestDumpKafkaFiles(t *testing.T) {
	var l logBuilder
	l.add(dataBatch(spec{pid: 1, seq: 0, n: 2}))
	dir := t.TempDir()
	l.write(t, dir)
	idx := binary.BigEndian.AppendUint32(nil, 1)
	idx = binary.BigEndian.AppendUint32(idx, 0)
	idx = append(idx, make([]byte, 64)...) // preallocated
	os.WriteFile(filepath.Join(dir, "00000000000000000000.index"), idx, 0o644)
	os.WriteFile(filepath.Join(dir, "partition.metadata"), []byte("version: 0\ntopic_id: sz0cWRdfQhKrhGDR9wkZmA\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "00000000000000000002.snapshot"), []byte{0, 1, 2, 3, 4, 5, 6, 7}, 0o644)
	out, d := dumpDir(t, dir, Options{Deep: true})
	mustContain(t, out, "offset: 1 position: 0 check: ok", "Index tail at position 8: zero entries (preallocated space) (64 bytes)",
		"topic_id: sz0cWRdfQhKrhGDR9wkZmA", "Not a minibroker producer snapshot")
	if d.Damaged+d.DeepFailed != 0 {
		t.Errorf("damaged %d, deep failed %d:\n%s", d.Damaged, d.DeepFailed, out)
	}
}

// After retention removed the first segment, a snapshot is checked by a
// replay that starts from the snapshot at the new first segment's base.
func TestDumpSnapshotDeepAfterRetention(t *testing.T) {
	var l logBuilder
	l.add(dataBatch(spec{pid: 1, seq: 0, n: 3})) // 0-2: the segment retention removes
	split := len(l.data)
	l.add(dataBatch(spec{pid: 2, seq: 0, n: 1})) // 3
	l.add(dataBatch(spec{pid: 1, seq: 3, n: 1})) // 4
	full := t.TempDir()
	l.write(t, full)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "00000000000000000003.log"), l.data[split:], 0o644)
	os.WriteFile(filepath.Join(dir, "00000000000000000003.snapshot"), snapshotOf(t, full, 3), 0o644)
	os.WriteFile(filepath.Join(dir, "00000000000000000005.snapshot"), snapshotOf(t, full, 5), 0o644)
	out, d := dumpDir(t, dir, Options{Deep: true})
	if d.DeepFailed != 0 {
		t.Fatalf("deep failures %d:\n%s", d.DeepFailed, out)
	}
	mustContain(t, out, "Deep check against a replay of offsets below 5: 0 failed; replayed from offset 3")
}

// Checkpoints are read with the log's parser: a damaged one is reported
// as damage (text and JSON); one the broker would refuse but whose layout
// is whole (a version the log does not write, epochs out of order) is
// shown as it is, so the reader sees what the broker ignored.
func TestDumpCheckpoints(t *testing.T) {
	var l logBuilder
	l.add(dataBatch(spec{pid: 1, seq: 0, n: 2}))
	cases := []struct {
		name, data string
		damage     string // "" when the file is shown, not damaged
		shown      string
	}{
		{"leader-epoch-checkpoint", "0\n3\n0 0\n", "Malformed checkpoint: count line \"3\" for 1 entries", ""},
		{"leader-epoch-checkpoint", "0\n1\n0 x\n", `Malformed checkpoint: entry 0: "x" is not a number`, ""},
		{"recovery-point", "0\n", "Malformed checkpoint: 1 lines, want at least 2", ""},
		{"log-start-offset", "0\nseven\n", `Malformed checkpoint: offset line "seven"`, ""},
		{"leader-epoch-checkpoint", "0\n2\n5 10\n3 4\n", "", "epoch: 3 startOffset: 4"},
		{"clean-shutdown", "1\n-4\n", "", "version: 1 offset: -4"},
	}
	for _, c := range cases {
		t.Run(c.name+"/"+c.data, func(t *testing.T) {
			dir := t.TempDir()
			l.write(t, dir)
			if err := os.WriteFile(filepath.Join(dir, c.name), []byte(c.data), 0o644); err != nil {
				t.Fatal(err)
			}
			out, d := dumpDir(t, dir, Options{})
			if c.damage == "" {
				mustContain(t, out, c.shown)
				if d.Damaged != 0 {
					t.Errorf("counted as damage:\n%s", out)
				}
				return
			}
			mustContain(t, out, c.damage)
			if d.Damaged != 1 {
				t.Errorf("damaged %d, want 1:\n%s", d.Damaged, out)
			}
			js, _ := dumpDir(t, dir, Options{JSON: true})
			mustContain(t, js, `"kind":"damage"`, `"file":"`+filepath.Join(dir, c.name)+`"`)
		})
	}
}
