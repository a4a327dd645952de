//go:build !linux

package protocol

import (
	"errors"
	"net"
	"os"
)

// canSendFile: sendfile(2) is used on Linux only; elsewhere Fetch record
// sets are copied.
func canSendFile(net.Conn) bool { return false }

func sendFile(net.Conn, *os.File, int64, int, func()) error {
	return errors.New("sendfile(2) is not used on this system")
}
