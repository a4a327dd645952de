package coordinator

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// goldenTxnStates are written, after an epoch record, to
// testdata/txn-log.golden.hex (a hex dump of a transaction log file).
// Regenerate with MINIBROKER_UPDATE_GOLDEN=1 after an intended format
// change, and bump txnLogVersion.
var goldenTxnStates = []TxnMetadata{
	{TransactionalID: "a", ProducerID: 1000, LastProducerID: -1, NextProducerID: -1, ProducerEpoch: 3, LastProducerEpoch: -1, TimeoutMs: 60000,
		State: TxnOngoing, StartMs: 1767225600000, LastUpdateMs: 1767225600001,
		Partitions: []TopicPartition{{"orders", 0}, {"orders", 1}}, Groups: []string{"g"}},
	{TransactionalID: "b", ProducerID: 1001, LastProducerID: 999, NextProducerID: -1, ProducerEpoch: 0, LastProducerEpoch: 32767, TimeoutMs: 1000,
		State: TxnCompleteCommit, StartMs: -1, LastUpdateMs: 1767225600002},
	// A type-3 record: transaction version 2, a commit that exhausted the
	// epoch, moving to producer id 1003 once its markers are written.
	{TransactionalID: "c", ProducerID: 1002, LastProducerID: -1, NextProducerID: 1003, ProducerEpoch: 32767, LastProducerEpoch: 32766,
		TimeoutMs: 1000, State: TxnPrepareCommit, StartMs: 1767225600003, LastUpdateMs: 1767225600004,
		Partitions: []TopicPartition{{"orders", 0}}, ClientTxnVersion: 2},
}

// TestTxnLogGolden pins the old transaction log's bytes and reads them
// back through readLegacyTxnLog: a file written by an earlier build is
// read by the upgrade.
func TestTxnLogGolden(t *testing.T) {
	data := legacyTxnLogFile(4, goldenTxnStates...)
	path := filepath.Join("testdata", "txn-log.golden.hex")
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
		t.Fatalf("transaction log encoding changed (bump txnLogVersion; regenerate with MINIBROKER_UPDATE_GOLDEN=1):\n got:\n%s\nwant:\n%s", got, want)
	}
	mem := errorfs.NewMem()
	must(t, mem.MkdirAll("/d", 0o755))
	must(t, vfs.WriteFileAtomic(mem, "/d", filepath.Join("/d", txnLogFile), data))
	l, err := readLegacyTxnLog(mem, "/d")
	if err != nil {
		t.Fatal(err)
	}
	states := l.states
	if l.epoch != 4 || len(states) != len(goldenTxnStates) || l.torn != 0 {
		t.Fatalf("epoch %d, %d states, %d torn bytes", l.epoch, len(states), l.torn)
	}
	for _, md := range goldenTxnStates {
		if fmt.Sprint(states[md.TransactionalID]) != fmt.Sprint(md) {
			t.Fatalf("%s read back as %+v", md.TransactionalID, states[md.TransactionalID])
		}
	}
}
