package log

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// TestGoldenFormats pins the on-disk formats: a fixed sequence of
// operations must produce exactly the files in testdata/golden (stored as
// hex dumps). Regenerate with MINIBROKER_UPDATE_GOLDEN=1 after an
// intended format change — and then bump the format's version.
func TestGoldenFormats(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.IndexIntervalBytes = 100
	l := openTest(t, dir, cfg, Options{})
	for i := range 6 {
		b := testBatch{base: int64(i * 2), records: 2, epoch: int32(i / 2), ts: 1_700_000_000_000 + int64(i*10), valueSize: 30}.build()
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AppendAbortedTxn(AbortedTxn{ProducerID: 7, FirstOffset: 2, LastOffset: 9, LastStableOffset: 2}); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteRecordsBefore(1); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files := []string{
		"00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex",
		"00000000000000000000.txnindex", epochCheckpointName, logStartOffsetName, cleanShutdownName,
		recoveryPointName,
	}
	update := os.Getenv("MINIBROKER_UPDATE_GOLDEN") == "1"
	for _, name := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "golden", name+".hex")
		if update {
			os.MkdirAll(filepath.Dir(golden), 0o755)
			if err := os.WriteFile(golden, []byte(hex.Dump(got)), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (regenerate with MINIBROKER_UPDATE_GOLDEN=1)", err)
		}
		if !bytes.Equal([]byte(hex.Dump(got)), want) {
			t.Errorf("%s differs from %s:\n%s", name, golden, hex.Dump(got))
		}
	}
}
