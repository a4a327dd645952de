package coordinator

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// goldenGroupRecords is one record of every type, written in this order to
// testdata/group-log.golden.hex (a hex dump of the group log file).
// Regenerate with MINIBROKER_UPDATE_GOLDEN=1 after an intended format
// change, and bump groupLogVersion.
var goldenGroupRecords = []record{
	{typ: recOffsetCommit, group: "g", tp: TopicPartition{"orders", 3}, offset: OffsetAndMetadata{Offset: 42, LeaderEpoch: 7, Metadata: "m", CommitTimestamp: 1767225600000}},
	{typ: recOffsetDelete, group: "g", tp: TopicPartition{"orders", 3}},
	{typ: recGroupMetadata, group: "g", meta: &groupMetadata{
		state: StateStable, protocolType: "consumer", protocol: "range", leader: "c-1", generation: 5, stateSince: 1767225600000,
		members: []memberMetadata{{id: "c-1", instanceID: "i1", clientID: "c", clientHost: "/127.0.0.1",
			sessionTimeoutMs: 45000, rebalanceTimeoutMs: 60000, subscription: []byte{0, 1}, assignment: []byte{2}}},
	}},
	{typ: recGroupDelete, group: "old"},
	{typ: recTxnStage, group: "g", producerID: 1000, producerEpoch: 2, tp: TopicPartition{"orders", 0}, offset: OffsetAndMetadata{Offset: 9, LeaderEpoch: -1, CommitTimestamp: 1767225600001}},
	{typ: recTxnComplete, producerID: 1000, commit: true},
}

func TestGroupLogGolden(t *testing.T) {
	data := groupLogHeader()
	for i := range goldenGroupRecords {
		data = appendFrame(data, &goldenGroupRecords[i])
	}
	path := filepath.Join("testdata", "group-log.golden.hex")
	if os.Getenv("MINIBROKER_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, []byte(hex.Dump(data)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with MINIBROKER_UPDATE_GOLDEN=1)", err)
	}
	if got := hex.Dump(data); got != string(want) {
		t.Fatalf("group log encoding changed (bump groupLogVersion; regenerate with MINIBROKER_UPDATE_GOLDEN=1):\n got:\n%s\nwant:\n%s", got, want)
	}
	var decoded []record
	n, damaged := scanFrames(data, func(r record) { decoded = append(decoded, r) })
	if damaged != nil || n != len(data) {
		t.Fatalf("scan: %d of %d bytes, damaged %v", n, len(data), damaged)
	}
	if !reflect.DeepEqual(decoded, goldenGroupRecords) {
		t.Fatalf("decoded records differ:\n got %+v\nwant %+v", decoded, goldenGroupRecords)
	}
}

func TestDumpGroupLog(t *testing.T) {
	data := groupLogHeader()
	for i := range goldenGroupRecords {
		data = appendFrame(data, &goldenGroupRecords[i])
	}
	var b strings.Builder
	if err := DumpGroupLog(&b, append(data, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`OffsetCommit group="g" partition=orders-3 offset=42 leaderEpoch=7 metadata="m"`,
		`GroupMetadata group="g" state=Stable protocolType="consumer" protocol="range" leader="c-1" generation=5`,
		`GroupDelete group="old"`, `TxnOffsetStage group="g" producerId=1000`, `TxnOffsetComplete producerId=1000 result=COMMIT`,
		`torn tail at byte`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dump lacks %q:\n%s", want, out)
		}
	}
}
