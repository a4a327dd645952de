package log

import (
	"os"
	"syscall"

	"github.com/minibroker/minibroker/internal/vfs"
)

// dupFile duplicates f's descriptor (close-on-exec) for a Span, while
// f's own Control keeps it from being closed meanwhile. Files that are not
// *os.File (the fault-injecting test file system) are not duplicated.
// share (knobs.spanSharesDescriptor, tests only) hands out f itself.
func dupFile(f vfs.File, share bool) (*os.File, bool) {
	osf, ok := f.(*os.File)
	if !ok || share {
		return osf, ok && osf != nil
	}
	rc, err := osf.SyscallConn()
	if err != nil {
		return nil, false
	}
	var nfd uintptr
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		nfd, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
	}); err != nil || errno != 0 {
		return nil, false // EMFILE: the caller reads the bytes instead
	}
	return os.NewFile(nfd, osf.Name()), true
}
