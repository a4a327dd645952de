//go:build !linux

package log

import (
	"os"

	"github.com/minibroker/minibroker/internal/vfs"
)

// dupFile: spans are a Linux feature (sendfile(2)); elsewhere every read
// copies.
func dupFile(vfs.File, bool) (*os.File, bool) { return nil, false }
