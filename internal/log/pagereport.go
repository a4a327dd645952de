package log

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// AutoDropBehindBytes is the drop-behind (writeback.go) that
// log.writeback.drop.behind.bytes = -1, its default, stands for on a
// machine that hands the memory it frees back to its host
// (FreePageReporting); elsewhere -1 is 0, the kernel's LRU, as for Kafka.
// Every partition's first this-many bytes after a start or a growth of
// the page cache are written into pages the host faults in; the smaller
// it is, the sooner appends reuse the pages they freed
// (docs/OPTIMISATIONS.md, "Produce path"), and the sooner a consumer
// behind the end reads from the disk. It must stay above two
// write-behind windows (DefaultWritebackBytes), which are dirty or in
// flight and so cannot be dropped.
const AutoDropBehindBytes = 64 << 20

// The virtio balloon device (virtio device id 5) and its feature bit
// VIRTIO_BALLOON_F_REPORTING (5): the guest reports pages it has freed
// to the host, which takes their memory back (Linux's page_reporting,
// after about two seconds free), and the next use of such a page is
// faulted in by the host.
const (
	virtioBalloonDevice   = "0x0005"
	virtioBalloonFReports = 5
)

// FreePageReporting reports whether this machine is a virtual machine
// whose virtio balloon reports free pages to its host, read from the
// sysfs mounted at sysfs ("/sys"): a device under bus/virtio/devices
// whose device file reads virtioBalloonDevice and whose features file
// (one '0' or '1' per feature bit, bit 0 first) has the reporting bit set.
// Any file it cannot read counts as no.
func FreePageReporting(sysfs string) bool {
	devs, err := os.ReadDir(filepath.Join(sysfs, "bus", "virtio", "devices"))
	if err != nil {
		return false
	}
	for _, d := range devs {
		dir := filepath.Join(sysfs, "bus", "virtio", "devices", d.Name())
		id, err := os.ReadFile(filepath.Join(dir, "device"))
		if err != nil || strings.TrimSpace(string(id)) != virtioBalloonDevice {
			continue
		}
		features, err := os.ReadFile(filepath.Join(dir, "features"))
		if err == nil && len(features) > virtioBalloonFReports && features[virtioBalloonFReports] == '1' {
			return true
		}
	}
	return false
}

// AutoDropBehind is the drop-behind log.writeback.drop.behind.bytes = -1
// stands for on this machine: AutoDropBehindBytes where FreePageReporting
// reads yes from /sys (read once), else 0.
func AutoDropBehind() int64 {
	if hostTakesFreePages() {
		return AutoDropBehindBytes
	}
	return 0
}

var hostTakesFreePages = sync.OnceValue(func() bool { return FreePageReporting("/sys") })
