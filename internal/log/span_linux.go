package log

import (
	"os"
	"syscall"

	"github.com/minibroker/minibroker/internal/vfs"
)

// dupFile duplicates f's descriptor (close-on-exec) for a Span, while
// f's own Control keeps it from being closed meanwhile. Files that are not
// *os.File (the fault-injecting test file system) are not duplicated.
func dupFile(f vfs.File) (*os.File, bool) {
	osf, ok := f.(*os.File)
	if !ok || spanSharesDescriptor {
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

// spanSharesDescriptor is a test seam: spans get the segment's own file
// instead of a duplicate, which a segment closed under a span turns into
// a failed (or, once the number is reused, wrong) send.
var spanSharesDescriptor = false
