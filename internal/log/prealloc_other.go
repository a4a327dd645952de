//go:build !linux

package log

import "github.com/minibroker/minibroker/internal/vfs"

// fallocateKeepSize: preallocation is Linux only.
func fallocateKeepSize(vfs.File, int64, int64) error { return errNoPrealloc }
