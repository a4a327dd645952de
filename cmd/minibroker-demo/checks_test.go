package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// batchLine is one dump-log --json batch line with numbered records.
func batchLine(base int64, pid int64, seq int32, crc uint32, values ...int64) string {
	b := map[string]any{"kind": "batch", "base_offset": base, "last_offset": base + int64(len(values)) - 1,
		"count": len(values), "size": 100, "crc": crc, "crc_valid": true, "producer_id": pid, "producer_epoch": 0,
		"base_sequence": seq, "partition_leader_epoch": 0}
	var recs []map[string]any
	for i, v := range values {
		recs = append(recs, map[string]any{"offset": base + int64(i), "value": fmt.Sprint(v)})
	}
	b["records"] = recs
	raw, _ := json.Marshal(b)
	return string(raw)
}

func barrierLine(base int64, epoch int32) string {
	return fmt.Sprintf(`{"kind":"batch","base_offset":%d,"last_offset":%d,"count":1,"size":85,"crc":7,"crc_valid":true,`+
		`"control":true,"producer_id":-1,"producer_epoch":-1,"base_sequence":-1,"partition_leader_epoch":%d,`+
		`"control_record":{"type":"MIRROR_PID_RESET","mirror_pid_reset":{"source_cluster_id":"a"}}}`, base, base, epoch)
}

func writeDump(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dump.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// check-logs passes identical logs and a mirror that is behind, and finds
// each kind of damage it exists to find.
func TestCheckLogs(t *testing.T) {
	src := []string{batchLine(0, 0, 0, 11, 1, 2), batchLine(2, 0, 2, 12, 3), batchLine(3, 0, 3, 13, 4, 5)}
	for _, tc := range []struct {
		name    string
		mirror  []string
		sameEnd bool
		want    string // "" = passes
	}{
		{"identical", src, true, ""},
		{"behind", src[:2], false, ""},
		{"behind, --same-end", src[:2], true, "ends at 3, the source at 5"},
		{"different bytes", []string{src[0], batchLine(2, 0, 2, 99, 3), src[2]}, false, "batch at 2 differs"},
		{"gap", []string{src[0], src[2]}, false, "gap, offsets 2-2 missing"},
		{"second copy", []string{src[0], src[1], batchLine(3, 0, 2, 12, 3)}, false, "second copy of producer 0 epoch 0 sequence 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkLogs(io.Discard, writeDump(t, src...), writeDump(t, tc.mirror...), tc.sameEnd)
			var out strings.Builder
			checkLogs(&out, writeDump(t, src...), writeDump(t, tc.mirror...), tc.sameEnd)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("failed: %v\n%s", err, out.String())
			case tc.want != "" && (err == nil || !strings.Contains(out.String(), tc.want)):
				t.Fatalf("want a problem %q, got %v\n%s", tc.want, err, out.String())
			}
		})
	}
}

// Producer ids start again after a failover: the same producer id, epoch
// and sequence on both sides of a MIRROR_PID_RESET barrier is not a second
// copy; without the barrier between them it is.
func TestSecondCopyIsScopedByBarrier(t *testing.T) {
	across := examine(mustRead(t, writeDump(t, batchLine(0, 0, 0, 1, 1), barrierLine(1, 1), batchLine(2, 0, 0, 2, 2))))
	if len(across.SecondCopy) != 0 || len(across.Barriers) != 1 {
		t.Fatalf("across a barrier: %+v", across)
	}
	without := examine(mustRead(t, writeDump(t, batchLine(0, 0, 0, 1, 1), batchLine(1, 0, 0, 2, 2))))
	if len(without.SecondCopy) != 1 {
		t.Fatalf("no barrier: second copy not found: %+v", without)
	}
}

func mustRead(t *testing.T, p string) []dumpBatch {
	t.Helper()
	b, err := readDump(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The report passes a complete ledger and fails on a lost record, a record
// stored twice, a record read twice and a stray record that survived.
func TestReport(t *testing.T) {
	write := func(dir, name string, v any) {
		raw, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(acked, read [][2]int64, log ...string) error {
		dir := t.TempDir()
		write(dir, "produce-1.json", producerLedger{Client: "producer", Acked: acked, StartMs: 2000, FirstAckMs: 2500})
		write(dir, "consume-1.json", consumerLedger{Client: "consumer", Read: read})
		if err := os.WriteFile(filepath.Join(dir, "events.txt"), []byte("1000 mirror stop on b\n1500 b writable\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		err := report(&out, dir, writeDump(t, log...))
		if err == nil && !strings.Contains(out.String(), "mirror stop on b → first record acknowledged there: 1500 ms") {
			t.Fatalf("no failover time:\n%s", out.String())
		}
		return err
	}
	all := [][2]int64{{1, 3}}
	good := []string{batchLine(0, 0, 0, 1, 1, 2), batchLine(2, 0, 2, 2, 3)}
	if err := run(all, all, good...); err != nil {
		t.Fatalf("complete ledger: %v", err)
	}
	for name, err := range map[string]error{
		"lost":         run(all, all, batchLine(0, 0, 0, 1, 1, 2)),
		"stored twice": run(all, all, append(good, barrierLine(3, 1), batchLine(4, 1, 0, 3, 3))...),
		"never read":   run(all, [][2]int64{{1, 2}}, good...),
		"stray left": run(all, all, append(good, `{"kind":"batch","base_offset":3,"last_offset":3,"crc_valid":true,"producer_id":5,`+
			`"records":[{"offset":3,"value":"stray-1"}]}`)...),
	} {
		if err == nil {
			t.Errorf("%s: the report passed", name)
		}
	}
}
