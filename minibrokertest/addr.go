package minibrokertest

import (
	"errors"
	"syscall"
)

func isAddrInUse(err error) bool { return errors.Is(err, syscall.EADDRINUSE) }

func isLockBusy(err error) bool { return errors.Is(err, syscall.EWOULDBLOCK) }
