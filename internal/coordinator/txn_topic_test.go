package coordinator

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// TestTxnTopicGolden pins the records of __transaction_state
// (testdata/txn-topic.golden.hex: key and value of each golden state, and
// a tombstone), decodes them with kmsg's TxnMetadataKey/TxnMetadataValue
// as a client would, and reads them back as the start-up does.
func TestTxnTopicGolden(t *testing.T) {
	var dump strings.Builder
	dead := TxnMetadata{TransactionalID: "d", ProducerID: 7, State: TxnDead}
	for _, md := range append(append([]TxnMetadata{}, goldenTxnStates...), dead) {
		fmt.Fprintf(&dump, "key %s\n%svalue %s\n%s", md.TransactionalID, hex.Dump(txnKey(md.TransactionalID)),
			md.TransactionalID, hex.Dump(txnValue(md)))
	}
	path := filepath.Join("testdata", "txn-topic.golden.hex")
	if os.Getenv("MINIBROKER_UPDATE_GOLDEN") == "1" {
		must(t, os.WriteFile(path, []byte(dump.String()), 0o644))
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with MINIBROKER_UPDATE_GOLDEN=1)", err)
	}
	if dump.String() != string(want) {
		t.Fatalf("__transaction_state encoding changed (regenerate with MINIBROKER_UPDATE_GOLDEN=1):\n got:\n%s\nwant:\n%s", dump.String(), want)
	}
	for _, md := range goldenTxnStates {
		var k kmsg.TxnMetadataKey
		var v kmsg.TxnMetadataValue
		if err := k.ReadFrom(txnKey(md.TransactionalID)); err != nil || k.Version != 0 || k.TransactionalID != md.TransactionalID {
			t.Fatalf("kmsg key: %+v %v", k, err)
		}
		if err := v.ReadFrom(txnValue(md)); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, tp := range v.Topics {
			parts = append(parts, fmt.Sprint(tp.Topic, tp.Partitions))
		}
		got := fmt.Sprintf("v%d pid=%d epoch=%d timeout=%d state=%s parts=%v start=%d update=%d prev=%d next=%d tv=%d",
			v.Version, v.ProducerID, v.ProducerEpoch, v.TimeoutMillis, v.State, parts, v.StartTimestamp, v.LastUpdateTimestamp,
			v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion)
		wantV := fmt.Sprintf("v1 pid=%d epoch=%d timeout=%d state=%s parts=%v start=%d update=%d prev=%d next=%d tv=%d",
			md.ProducerID, md.ProducerEpoch, md.TimeoutMs, md.State, partsByTopic(md.Partitions), md.StartMs, md.LastUpdateMs,
			md.LastProducerID, md.NextProducerID, md.ClientTxnVersion)
		if got != wantV {
			t.Errorf("kmsg reads %s\nwant       %s", got, wantV)
		}
		id, back, live, err := decodeTxnRecord(txnKey(md.TransactionalID), txnValue(md))
		if err != nil || !live || id != md.TransactionalID || fmt.Sprint(back) != fmt.Sprint(md) {
			t.Errorf("read back %+v (%v, live %v), want %+v", back, err, live, md)
		}
	}
	if id, _, live, err := decodeTxnRecord(txnKey("d"), txnValue(dead)); err != nil || live || id != "d" {
		t.Errorf("tombstone read back live=%v %v", live, err)
	}
}

func partsByTopic(tps []TopicPartition) []string {
	var out []string
	for i := 0; i < len(tps); {
		j := i
		var ps []int32
		for ; j < len(tps) && tps[j].Topic == tps[i].Topic; j++ {
			ps = append(ps, tps[j].Partition)
		}
		out = append(out, fmt.Sprint(tps[i].Topic, ps))
		i = j
	}
	return out
}

// A value of version 0 (Kafka's before transaction.version 1) is read;
// a key of another version is skipped, as Kafka's loader skips it.
func TestTxnTopicReadsValueV0(t *testing.T) {
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.ProducerEpoch, v.TimeoutMillis, v.State = 0, 5, 2, 1000, 4
	v.StartTimestamp, v.LastUpdateTimestamp = 10, 11
	id, md, live, err := decodeTxnRecord(txnKey("x"), v.AppendTo(nil))
	if err != nil || !live || id != "x" || md.ProducerID != 5 || md.State != TxnCompleteCommit || md.LastProducerID != -1 || md.NextProducerID != -1 {
		t.Fatalf("v0: %+v %v", md, err)
	}
	if _, _, _, err := decodeTxnRecord([]byte{0, 1, 0, 1, 'x'}, v.AppendTo(nil)); !errors.Is(err, errUnknownTxnKey) {
		t.Fatalf("key version 1: %v", err)
	}
}

// The last record of an id wins when the coordinator reopens, and an
// expired id's tombstone removes it.
func TestTxnTopicLastRecordWins(t *testing.T) {
	h := newTxnHarness(t, vfs.Default, t.TempDir())
	tx := h.open()
	for range 50 {
		tx.InitProducerID("t", 1000, -1, -1)
	}
	tx.InitProducerID("u", 1000, -1, -1)
	h.clock.Add(2 * time2h)
	tx.InitProducerID("v", 1000, -1, -1)
	tx.mu.Lock()
	expired, err := tx.machine.ExpireIDs(h.clock.Now().UnixMilli() - int64(time2h/1e6))
	tx.mu.Unlock()
	if err != nil || fmt.Sprint(expired) != "[t u]" {
		t.Fatalf("expired %v %v", expired, err)
	}
	tx.InitProducerID("t", 1000, -1, -1) // t again, after its tombstone
	must(t, tx.Close())
	tx = h.open()
	defer tx.Close()
	md, err := tx.Describe("t")
	if err != nil || md.ProducerEpoch != 0 || md.ProducerID == 0 || tx.CoordinatorEpoch() != 1 {
		t.Fatalf("after reopen: %+v %v, coordinator epoch %d", md, err, tx.CoordinatorEpoch())
	}
	if _, err := tx.Describe("u"); !errors.Is(err, ErrTransactionalIDNotFound) {
		t.Fatalf("expired u after reopen: %v", err)
	}
	if _, err := tx.Describe("v"); err != nil {
		t.Fatal(err)
	}
}

const time2h = 2 * 3600 * 1e9

// A failed fsync of __transaction_state is never acknowledged, and the
// partition refuses further writes.
func TestTxnTopicFailedSync(t *testing.T) {
	efs := errorfs.Wrap(vfs.Default)
	h := newTxnHarness(t, efs, t.TempDir())
	tx := h.open()
	defer tx.Close()
	if _, err := tx.InitProducerID("s", 1000, -1, -1); err != nil {
		t.Fatal(err)
	}
	p := PartitionFor("t", testTxnPartitions)
	efs.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: fmt.Sprintf("__transaction_state-%d/", p), Count: 1})
	if _, err := tx.InitProducerID("t", 1000, -1, -1); !errors.Is(err, ErrTxnLogUnavailable) {
		t.Fatalf("init with failing fsync: %v", err)
	}
	if _, err := tx.InitProducerID("t", 1000, -1, -1); !errors.Is(err, ErrTxnLogUnavailable) {
		t.Fatalf("init after a failed fsync: %v", err)
	}
}

// A start with no state writes nothing; the first record writes the
// coordinator epoch first, and a failed write of it is not sticky.
func TestTxnEpochWrittenByFirstRecord(t *testing.T) {
	efs := errorfs.Wrap(vfs.Default)
	dir := t.TempDir()
	path := filepath.Join(dir, txnEpochFile)
	h := newTxnHarness(t, efs, dir)
	for range 2 {
		tx := h.open()
		if tx.CoordinatorEpoch() != 0 {
			t.Fatalf("coordinator epoch %d with no state", tx.CoordinatorEpoch())
		}
		must(t, tx.Close())
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a start without transactions wrote %s: %v", txnEpochFile, err)
		}
	}
	tx := h.open()
	efs.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: txnEpochFile, Count: 1})
	if _, err := tx.InitProducerID("t", 1000, -1, -1); !errors.Is(err, ErrTxnLogUnavailable) {
		t.Fatalf("init with the epoch's fsync failing: %v", err)
	}
	if _, err := tx.InitProducerID("t", 1000, -1, -1); err != nil {
		t.Fatalf("init after a failed epoch write: %v", err)
	}
	must(t, tx.Close())
	tx = h.open()
	defer tx.Close()
	if tx.CoordinatorEpoch() != 1 {
		t.Fatalf("coordinator epoch %d after the first start with state, want 1", tx.CoordinatorEpoch())
	}
	if _, err := tx.Describe("t"); err != nil {
		t.Fatal(err)
	}
	// The epoch file gone while the topic holds state: refuse to start.
	must(t, tx.Close())
	must(t, os.Remove(path))
	if _, err := OpenTransactions(TxnOptions{FS: efs, Dir: dir, Topic: h.txnTopic(), ProducerIDs: &ProducerIDs{fs: efs, dir: dir}}); !errors.Is(err, ErrTxnEpochMissing) {
		t.Fatalf("open without the epoch file: %v", err)
	}
}

// writeLegacy writes dir's transaction-state.log as an earlier version
// left it: the golden states, coordinator epoch 4.
func writeLegacy(t *testing.T, fs vfs.FS, dir string) {
	t.Helper()
	must(t, vfs.WriteFileAtomic(fs, dir, filepath.Join(dir, txnLogFile), legacyTxnLogFile(4, goldenTxnStates...)))
}

func checkGolden(states map[string]TxnMetadata) error {
	if len(states) != len(goldenTxnStates) {
		return fmt.Errorf("%d states, want %d", len(states), len(goldenTxnStates))
	}
	for _, md := range goldenTxnStates {
		if fmt.Sprint(states[md.TransactionalID]) != fmt.Sprint(md) {
			return fmt.Errorf("%s reads %+v", md.TransactionalID, states[md.TransactionalID])
		}
	}
	return nil
}

// TestTxnUpgradeFromLegacyLog: a data dir with the transaction log of an
// earlier version starts with its states (the decided commit's markers
// written at once, with a coordinator epoch above the file's), the file
// is gone, and the topic alone holds them at the next start.
func TestTxnUpgradeFromLegacyLog(t *testing.T) {
	dir := t.TempDir()
	writeLegacy(t, vfs.Default, dir)
	h := newTxnHarness(t, vfs.Default, dir)
	tx := h.open()
	if tx.CoordinatorEpoch() != 5 {
		t.Fatalf("coordinator epoch %d after the upgrade, want 5", tx.CoordinatorEpoch())
	}
	if _, err := os.Stat(filepath.Join(dir, txnLogFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s after the upgrade: %v", txnLogFile, err)
	}
	tx.mu.Lock()
	states := map[string]TxnMetadata{}
	for id, md := range tx.machine.txns {
		states[id] = *md
	}
	tx.mu.Unlock()
	if err := checkGolden(states); err != nil {
		t.Fatal(err)
	}
	tx.Start()
	waitFor(t, func() bool { md, _ := tx.Describe("c"); return md.State == TxnCompleteCommit })
	if got := fmt.Sprint(h.markers.take()); got != "[orders-0 commit pid=1002 epoch=32767 coord=5]" {
		t.Fatalf("markers: %s", got)
	}
	must(t, tx.Close())
	tx = h.open()
	defer tx.Close()
	if md, _ := tx.Describe("c"); md.State != TxnCompleteCommit || md.ProducerID != 1003 || tx.CoordinatorEpoch() != 6 {
		t.Fatalf("after a restart: %+v, coordinator epoch %d", md, tx.CoordinatorEpoch())
	}
	if md, _ := tx.Describe("a"); fmt.Sprint(md) != fmt.Sprint(goldenTxnStates[0]) {
		t.Fatalf("a after a restart: %+v", md)
	}
}

// An old log with a torn tail is moved without the torn record (never
// acknowledged); a bad header is an error, never an empty state.
func TestTxnUpgradeTornTailAndBadHeader(t *testing.T) {
	full := legacyTxnLogFile(4, goldenTxnStates...)
	for _, cut := range []int{len(full) - 1, len(full) - 20} {
		dir := t.TempDir()
		must(t, os.WriteFile(filepath.Join(dir, txnLogFile), full[:cut], 0o644))
		h := newTxnHarness(t, vfs.Default, dir)
		tx := h.open()
		if n := len(tx.List()); n != 2 {
			t.Fatalf("cut at %d: %d ids, want 2 (c's record torn)", cut, n)
		}
		tx.Close()
	}
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, txnLogFile), []byte("XXXXXXXXXXXXXXXX"), 0o644))
	pids, _ := OpenProducerIDs(vfs.Default, dir)
	if _, err := OpenTransactions(TxnOptions{Dir: dir, ProducerIDs: pids, Topic: openTxnTopic(t, vfs.Default, dir)}); !errors.Is(err, ErrTxnLogCorrupt) {
		t.Fatalf("bad header: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, txnLogFile)); err != nil {
		t.Fatalf("the unreadable log was not kept: %v", err)
	}
}

// upgradeCrashRun cuts the upgrade after each of its file operations in
// turn (every operation after the cut fails, as after a kill -9), then
// starts again on what a kill -9 leaves (every write made so far) and on
// what a power loss leaves (CrashClone: only what was fsynced). It
// returns the cuts whose restart did not read the old states back.
func upgradeCrashRun(t *testing.T, k knobs) (bad []string, cuts int) {
	for cut := 0; ; cut++ {
		mem := errorfs.NewMem()
		must(t, mem.MkdirAll("/d", 0o755))
		writeLegacy(t, mem, "/d")
		efs := errorfs.Wrap(mem)
		topic := openTxnTopic(t, efs, "/d")
		efs.Inject(errorfs.Rule{Skip: cut})
		_, err := openTxnState(efs, "/d", topic, k)
		if err == nil && len(efs.Injected()) == 0 {
			return bad, cut // the upgrade ran to its end before the cut
		}
		for _, after := range []struct {
			name string
			fs   *errorfs.MemFS
		}{{"kill -9", mem}, {"power loss", mem.CrashClone()}} {
			st, err := openTxnState(after.fs, "/d", openTxnTopic(t, after.fs, "/d"), knobs{})
			switch {
			case err != nil:
				bad = append(bad, fmt.Sprintf("cut after %d operations, %s: restart: %v", cut, after.name, err))
				continue
			case checkGolden(st.states) != nil:
				bad = append(bad, fmt.Sprintf("cut after %d operations, %s: %v", cut, after.name, checkGolden(st.states)))
			case st.epoch <= 4:
				bad = append(bad, fmt.Sprintf("cut after %d operations, %s: coordinator epoch %d, not above the old log's 4", cut, after.name, st.epoch))
			}
			if _, err := after.fs.Stat("/d/" + txnLogFile); err == nil {
				bad = append(bad, fmt.Sprintf("cut after %d operations, %s: %s still there after the restart", cut, after.name, txnLogFile))
			}
		}
	}
}

// TestTxnUpgradeCrash: the upgrade can be cut after any file operation
// and run again: the restart reads every state of the old log, at a
// coordinator epoch above its, and removes it.
func TestTxnUpgradeCrash(t *testing.T) {
	bad, cuts := upgradeCrashRun(t, knobs{})
	if len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
	if cuts < 10 {
		t.Fatalf("only %d file operations cut: the matrix proves little", cuts)
	}
	t.Logf("%d cuts, each restarted after a kill -9 and after a power loss", cuts)
}

// TestTxnUpgradeCrashNegativeControl removes the rule (the old log is
// removed only once the topic's records are durable) and shows cuts that
// lose a transaction's state.
func TestTxnUpgradeCrashNegativeControl(t *testing.T) {
	bad, _ := upgradeCrashRun(t, knobs{removeLegacyFirst: true})
	if len(bad) == 0 {
		t.Fatal("removing the old log first loses nothing: the upgrade crash test proves nothing")
	}
	t.Logf("removing the old log before the topic is durable:\n%s", strings.Join(bad, "\n"))
}

// Records of __transaction_state that do not decode are skipped, never a
// panic.
func FuzzDecodeTxnRecord(f *testing.F) {
	for _, md := range goldenTxnStates {
		f.Add(txnKey(md.TransactionalID), txnValue(md))
	}
	f.Add(txnKey("x"), []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		id, md, live, err := decodeTxnRecord(key, value)
		if err != nil || !live {
			return
		}
		_, again, live, err := decodeTxnRecord(txnKey(id), txnValue(md))
		if err != nil || !live || fmt.Sprint(again) != fmt.Sprint(md) {
			t.Fatalf("round trip: %+v vs %+v (%v)", md, again, err)
		}
	})
}
