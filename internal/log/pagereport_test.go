package log

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFreePageReporting reads virtio devices from a sysfs tree made in a
// temp dir: only a balloon (device 0x0005) with feature bit 5 set
// reports free pages to its host. Controls: the same balloon with bit 5
// clear, another device with bit 5 set, and no virtio bus at all.
func TestFreePageReporting(t *testing.T) {
	const reporting = "0110010100000000000000000000000010000000"
	const notReporting = "0110000100000000000000000000000010000000"
	for _, c := range []struct {
		name string
		devs map[string][2]string // name: device id, features
		want bool
	}{
		{"balloon reporting", map[string][2]string{"virtio0": {"0x0005", reporting}, "virtio1": {"0x0002", notReporting}}, true},
		{"balloon reporting, not first", map[string][2]string{"virtio0": {"0x0001", notReporting}, "virtio3": {"0x0005\n", reporting + "\n"}}, true},
		{"balloon without reporting", map[string][2]string{"virtio0": {"0x0005", notReporting}}, false},
		{"other device with bit 5", map[string][2]string{"virtio0": {"0x0002", reporting}}, false},
		{"balloon with short features", map[string][2]string{"virtio0": {"0x0005", "0110"}}, false},
		{"no virtio devices", map[string][2]string{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			devices := filepath.Join(root, "bus", "virtio", "devices")
			if err := os.MkdirAll(devices, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, d := range c.devs {
				dir := filepath.Join(devices, name)
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for file, body := range map[string]string{"device": d[0], "features": d[1]} {
					if err := os.WriteFile(filepath.Join(dir, file), []byte(body), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := FreePageReporting(root); got != c.want {
				t.Fatalf("FreePageReporting = %v, want %v", got, c.want)
			}
		})
	}
	if FreePageReporting(filepath.Join(t.TempDir(), "absent")) {
		t.Fatal("no sysfs: reported yes")
	}
}

// TestAutoDropBehind: -1 stands for AutoDropBehindBytes exactly where
// this machine's sysfs says its host takes free pages, else for 0.
func TestAutoDropBehind(t *testing.T) {
	want := int64(0)
	if FreePageReporting("/sys") {
		want = AutoDropBehindBytes
	}
	if got := AutoDropBehind(); got != want {
		t.Fatalf("AutoDropBehind = %d, want %d (free page reporting %v)", got, want, FreePageReporting("/sys"))
	}
	if got := DefaultConfig().DropBehindBytes; got != want {
		t.Fatalf("DefaultConfig().DropBehindBytes = %d, want %d", got, want)
	}
	if AutoDropBehindBytes < 2*DefaultWritebackBytes {
		t.Fatalf("AutoDropBehindBytes %d: not above the two write-behind windows that cannot be dropped", AutoDropBehindBytes)
	}
}
