package log

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/minibroker/minibroker/internal/vfs"
)

// startWriteback asks the kernel to start writing the dirty pages of
// [off, off+n) of f without waiting for them (SYNC_FILE_RANGE_WRITE).
// Files that are not *os.File (the fault-injecting test file system) are
// left alone.
func startWriteback(f vfs.File, off, n int64) {
	syncFileRange(f, off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// waitWriteback waits for the writeback of [off, off+n) of f started
// earlier, starting it for pages still dirty.
func waitWriteback(f vfs.File, off, n int64) {
	syncFileRange(f, off, n, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
}

// dropCached drops the clean pages of [off, off+n) of f from the page
// cache (POSIX_FADV_DONTNEED; dirty pages stay, their writeback started).
func dropCached(f vfs.File, off, n int64) {
	withFd(f, func(fd int) { _ = unix.Fadvise(fd, off, n, unix.FADV_DONTNEED) })
}

func syncFileRange(f vfs.File, off, n int64, flags int) {
	withFd(f, func(fd int) { _ = unix.SyncFileRange(fd, off, n, flags) })
}

// withFd calls fn with f's descriptor if f is an *os.File; files of other
// file systems (the fault-injecting test file system) are left alone.
func withFd(f vfs.File, fn func(fd int)) {
	osf, ok := f.(*os.File)
	if !ok || osf == nil {
		return
	}
	rc, err := osf.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { fn(int(fd)) })
}
