//go:build !linux

package log

import "github.com/minibroker/minibroker/internal/vfs"

// Write-behind is Linux's sync_file_range; elsewhere the fsync at the
// roll writes the segment.
func startWriteback(vfs.File, int64, int64) {}
func waitWriteback(vfs.File, int64, int64)  {}
func dropCached(vfs.File, int64, int64)     {}
