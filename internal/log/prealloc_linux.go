package log

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/minibroker/minibroker/internal/vfs"
)

// fallocateKeepSize reserves blocks for [off, off+n) of f without changing
// its size (FALLOC_FL_KEEP_SIZE), so later writes there find their blocks
// allocated. Files that are not *os.File (the fault-injecting test file
// system) are left alone.
func fallocateKeepSize(f vfs.File, off, n int64) error {
	osf, ok := f.(*os.File)
	if !ok || osf == nil {
		return errNoPrealloc
	}
	rc, err := osf.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		ferr = unix.Fallocate(int(fd), unix.FALLOC_FL_KEEP_SIZE, off, n)
	}); err != nil {
		return err
	}
	return ferr
}
