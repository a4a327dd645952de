package log

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"

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

// EpochView is a copy of the leader-epoch cache with the log's start and
// end, on which the cache's own rules answer without changing the log:
// where an epoch ends (EndOffsetFor, as EndOffsetForEpoch) and what a
// truncation would leave (TruncatedTo, as TruncateTo drops entries). The
// mirror's divergence search walks such views.
type EpochView struct {
	cache    epochCache // a private copy
	logStart int64
	end      int64
}

// NewEpochView is the view of a cache holding entries (ascending, as
// EpochEntries returns them) for a log from logStart to end; entries
// starting at or after end are dropped, as a truncation to end drops
// them.
func NewEpochView(entries []EpochEntry, logStart, end int64) EpochView {
	v := EpochView{cache: epochCache{entries: slices.Clone(entries)}, logStart: logStart, end: end}
	v.cache.truncateFromEnd(end)
	return v
}

// EpochView is the log's leader-epoch cache, start and end, read
// together.
func (l *Log) EpochView() EpochView {
	l.mu.Lock()
	defer l.mu.Unlock()
	return NewEpochView(l.epochs.entries, l.logStart, l.leo)
}

// EndOffsetFor is EndOffsetForEpoch on the view (Kafka's
// LeaderEpochFileCache.endOffsetFor): the largest epoch at or below
// epoch and the offset where it ends; -1, -1 when there is none.
func (v EpochView) EndOffsetFor(epoch int32) (int32, int64) {
	return v.cache.endOffsetFor(epoch, v.end)
}

// TruncatedTo is the view as it would be after the log's TruncateTo(end)
// to a batch boundary (the log cuts whole batches: to an end inside a
// batch it ends at that batch's base offset, which the view does not
// know).
func (v EpochView) TruncatedTo(end int64) EpochView {
	c := epochCache{entries: slices.Clip(v.cache.entries)} // shared, never appended to
	c.truncateFromEnd(end)
	return EpochView{cache: c, logStart: v.logStart, end: end}
}

// Entries is a copy of the view's epoch entries, ascending.
func (v EpochView) Entries() []EpochEntry { return slices.Clone(v.cache.entries) }

// Latest is the view's latest epoch entry (ok false: none).
func (v EpochView) Latest() (EpochEntry, bool) { return v.cache.latest() }

// LogStart and End are the view's log start and end offsets.
func (v EpochView) LogStart() int64 { return v.logStart }
func (v EpochView) End() int64      { return v.end }

// Empty is a view with no records or no epochs: nothing can diverge.
func (v EpochView) Empty() bool { return v.end <= v.logStart || len(v.cache.entries) == 0 }

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

// decodeEpochCheckpoint reads leader-epoch-checkpoint (ParseCheckpoint)
// under the log's rules: version 0, epochs that fit an int32, no negative
// number, epochs and offsets strictly increasing.
func decodeEpochCheckpoint(data []byte) ([]EpochEntry, error) {
	c, err := ParseCheckpoint(data, true)
	if err != nil || c.Version != epochCheckpointVersion {
		return nil, errEpochCheckpoint
	}
	entries := make([]EpochEntry, 0, len(c.Entries))
	for _, f := range c.Entries {
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
