package protocol

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// errFileTruncated: a record set's file ended before its last byte.
var errFileTruncated = errors.New("record set file truncated during write")

// canSendFile reports whether record sets can be sent to nc from files.
func canSendFile(nc net.Conn) bool {
	_, ok := nc.(*net.TCPConn)
	return ok
}

// sendFile sends n bytes of f from pos to nc with sendfile(2), in chunks
// of writeChunk, calling chunk before each (to set a write deadline).
// The socket is non-blocking: a full send buffer waits in the poller,
// which honours the deadline.
func sendFile(nc net.Conn, f *os.File, pos int64, n int, chunk func()) error {
	dst, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		return err
	}
	src, err := f.SyscallConn()
	if err != nil {
		return err
	}
	for n > 0 {
		chunk()
		want := min(n, writeChunk)
		var sent int
		var serr error
		werr := dst.Write(func(out uintptr) bool {
			cerr := src.Control(func(in uintptr) {
				for {
					sent, serr = syscall.Sendfile(int(out), int(in), &pos, want)
					if serr != syscall.EINTR {
						return
					}
				}
			})
			if cerr != nil {
				serr = cerr
			}
			return serr != syscall.EAGAIN
		})
		switch {
		case werr != nil:
			return werr
		case serr != nil:
			return os.NewSyscallError("sendfile", serr)
		case sent == 0:
			return errFileTruncated
		}
		n -= sent
	}
	return nil
}
