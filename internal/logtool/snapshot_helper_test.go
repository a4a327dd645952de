package logtool

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/minibroker/minibroker/internal/psm"
	"github.com/minibroker/minibroker/internal/vfs"
)

// snapshotOf writes the producer snapshot psm would write for the log in
// dir at offset, and returns its bytes.
func snapshotOf(t *testing.T, dir string, offset int64) []byte {
	t.Helper()
	m := psm.NewManager(psm.Config{}, nil, nil)
	err := scanFile(filepath.Join(dir, "00000000000000000000.log"), func(b *Batch) error {
		if b.Header.LastOffset() >= offset {
			return nil
		}
		p, err := m.Prepare(psm.OriginReplication, []psm.PreparedBatch{{Header: b.Header, Raw: b.Raw}}, 0)
		if err != nil {
			return err
		}
		p.Apply()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	if err := m.WriteSnapshot(vfs.Default, tmp, offset); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(tmp, psm.SnapshotFileName(offset)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
