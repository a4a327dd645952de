package log

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/minibroker/minibroker/internal/vfs"
)

// EpochEntry is one line of the leader-epoch cache: Epoch started at
// StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

const (
	epochCheckpointName    = "leader-epoch-checkpoint"
	epochCheckpointVersion = 0
)

// epochCache is Kafka's LeaderEpochFileCache: entries sorted by epoch and
// by start offset, both strictly increasing. Guarded by Log.mu.
type epochCache struct {
	entries []EpochEntry
}

func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records that epoch starts at offset if it is above the latest
// epoch; it reports whether the cache changed. Entries that start at or
// after offset are dropped (they cannot precede a newer epoch's start).
func (c *epochCache) assign(epoch int32, offset int64) bool {
	if epoch < 0 {
		return false
	}
	if l, ok := c.latest(); ok && epoch <= l.Epoch {
		return false
	}
	c.truncateFromEnd(offset)
	c.entries = append(c.entries, EpochEntry{epoch, offset})
	return true
}

// truncateFromEnd drops entries starting at or after offset.
func (c *epochCache) truncateFromEnd(offset int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= offset {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// truncateFromStart makes the cache begin at offset: entries wholly below
// it go, and the one covering it is moved to start there.
func (c *epochCache) truncateFromStart(offset int64) bool {
	i := 0
	for i < len(c.entries) && c.entries[i].StartOffset <= offset {
		i++
	}
	if i == 0 || (i == 1 && c.entries[0].StartOffset == offset) {
		return false
	}
	keep := c.entries[i-1]
	keep.StartOffset = offset
	c.entries = append([]EpochEntry{keep}, c.entries[i:]...)
	return true
}

// endOffsetFor is Kafka's LeaderEpochFileCache.endOffsetFor.
func (c *epochCache) endOffsetFor(requested int32, logEnd int64) (int32, int64) {
	const undefinedEpoch, undefinedOffset = -1, -1
	if requested == undefinedEpoch {
		return undefinedEpoch, undefinedOffset
	}
	if l, ok := c.latest(); ok && l.Epoch == requested {
		return requested, logEnd
	}
	higher := -1
	for i, e := range c.entries {
		if e.Epoch > requested {
			higher = i
			break
		}
	}
	if higher < 0 {
		return undefinedEpoch, undefinedOffset
	}
	if higher == 0 {
		return requested, c.entries[0].StartOffset
	}
	return c.entries[higher-1].Epoch, c.entries[higher].StartOffset
}

// encodeEpochCheckpoint renders Kafka's checkpoint text format.
func encodeEpochCheckpoint(entries []EpochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", epochCheckpointVersion, len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

var errEpochCheckpoint = errors.New("malformed leader-epoch-checkpoint")

// decodeEpochCheckpoint parses the checkpoint text, requiring the entries
// to be strictly increasing in epoch and offset.
func decodeEpochCheckpoint(data []byte) ([]EpochEntry, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != strconv.Itoa(epochCheckpointVersion) {
		return nil, errEpochCheckpoint
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n != len(lines)-2 {
		return nil, errEpochCheckpoint
	}
	entries := make([]EpochEntry, 0, n)
	for _, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, errEpochCheckpoint
		}
		epoch, err1 := strconv.ParseInt(f[0], 10, 32)
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || epoch < 0 || off < 0 {
			return nil, errEpochCheckpoint
		}
		if k := len(entries); k > 0 && (int32(epoch) <= entries[k-1].Epoch || off <= entries[k-1].StartOffset) {
			return nil, errEpochCheckpoint
		}
		entries = append(entries, EpochEntry{int32(epoch), off})
	}
	return entries, nil
}

// readEpochCheckpoint loads the checkpoint; ok=false if it is missing or
// unreadable (the caller rebuilds it from the log).
func readEpochCheckpoint(fsys vfs.FS, path string) ([]EpochEntry, bool, error) {
	data, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, storageErr("read", path, err)
	}
	entries, err := decodeEpochCheckpoint(data)
	if err != nil {
		return nil, false, nil
	}
	return entries, true, nil
}
