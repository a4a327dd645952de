package log

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestUncleanOpenCutsTornTail(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, testConfig(), Options{})
	batches := appendN(t, l, 10, 3, 0, 0, 50)
	l.Flush()
	// Simulate a crash: no Close, so no clean-shutdown marker; then tear
	// the last batch.
	path := segmentFileName(dir, 0, logSuffix)
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()-5); err != nil {
		t.Fatal(err)
	}
	os.Remove(segmentFileName(dir, 0, indexSuffix))
	l2 := openTest(t, dir, testConfig(), Options{})
	defer l2.Close()
	if l2.LogEndOffset() != 27 {
		t.Fatalf("LEO %d after torn tail", l2.LogEndOffset())
	}
	if !bytes.Equal(readAll(t, l2), slices.Concat(batches[:9]...)) {
		t.Fatal("surviving batches differ")
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownName)); !os.IsNotExist(err) {
		t.Fatal("clean-shutdown marker present while open")
	}
	appendN(t, l2, 1, 3, 0, 0, 50)
	l.flusher.stop()
}
