package logtool

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/psm"
)

// Kind is the type of a file found in a partition directory.
type Kind int

const (
	KindUnknown Kind = iota
	KindSegment
	KindOffsetIndex
	KindTimeIndex
	KindTxnIndex
	KindSnapshot
	KindEpochCheckpoint
	KindOffsetCheckpoint // one offset: log-start-offset, clean-shutdown, recovery-point…
	KindPartitionMetadata
)

func (k Kind) String() string {
	switch k {
	case KindSegment:
		return "segment"
	case KindOffsetIndex:
		return "offset index"
	case KindTimeIndex:
		return "time index"
	case KindTxnIndex:
		return "transaction index"
	case KindSnapshot:
		return "producer snapshot"
	case KindEpochCheckpoint:
		return "leader-epoch checkpoint"
	case KindOffsetCheckpoint:
		return "offset checkpoint"
	case KindPartitionMetadata:
		return "partition metadata"
	}
	return "unknown"
}

// File is a file to dump: its path, kind, and for offset-named files the
// offset in its name.
type File struct {
	Path   string
	Kind   Kind
	Offset int64 // base offset (segments, indexes) or snapshot offset; -1 otherwise
}

// Checkpoint file names: minibroker's per-partition files (internal/log)
// and Kafka's per-data-directory ones, which share the format.
var offsetCheckpointNames = map[string]bool{
	log.LogStartOffsetName:             true,
	log.CleanShutdownName:              true,
	log.RecoveryPointName:              true,
	"recovery-point-offset-checkpoint": true, // Kafka's, per data directory
	"log-start-offset-checkpoint":      true,
	"replication-offset-checkpoint":    true,
	log.CleanerCheckpointName:          true, // minibroker: per partition, one offset (the first dirty)
}

const epochCheckpointName = log.EpochCheckpointName

var suffixKinds = map[string]Kind{
	log.LogSuffix:       KindSegment,
	log.IndexSuffix:     KindOffsetIndex,
	log.TimeIndexSuffix: KindTimeIndex,
	log.TxnIndexSuffix:  KindTxnIndex,
}

// Classify names the kind of a file from its base name, as the broker
// names them.
func Classify(path string) File {
	name := filepath.Base(path)
	f := File{Path: path, Offset: -1}
	if off, ok := psm.ParseSnapshotFileName(name); ok {
		f.Kind, f.Offset = KindSnapshot, off
		return f
	}
	for suffix, kind := range suffixKinds {
		digits, ok := strings.CutSuffix(name, suffix)
		if !ok || len(digits) != 20 {
			continue
		}
		if off, err := strconv.ParseInt(digits, 10, 64); err == nil && off >= 0 {
			f.Kind, f.Offset = kind, off
			return f
		}
	}
	switch {
	case name == epochCheckpointName:
		f.Kind = KindEpochCheckpoint
	case offsetCheckpointNames[name]:
		f.Kind = KindOffsetCheckpoint
	case name == "partition.metadata":
		f.Kind = KindPartitionMetadata
	}
	return f
}

// kindOrder places the files of one offset: the segment, then its
// indexes, then the snapshot taken at that offset.
var kindOrder = map[Kind]int{KindSegment: 0, KindOffsetIndex: 1, KindTimeIndex: 2, KindTxnIndex: 3, KindSnapshot: 4,
	KindEpochCheckpoint: 5, KindOffsetCheckpoint: 6, KindPartitionMetadata: 7, KindUnknown: 8}

// ListDir lists a partition directory: offset-named files by offset (a
// segment before its indexes, a snapshot after the segment starting at
// its offset), then checkpoint files, then files of unknown kind, each
// group by name. Subdirectories are skipped.
func ListDir(dir string) ([]File, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var files []File
	for _, de := range des {
		if de.IsDir() {
			continue
		}
		files = append(files, Classify(filepath.Join(dir, de.Name())))
	}
	sort.SliceStable(files, func(i, j int) bool {
		a, b := files[i], files[j]
		aOff, bOff := a.Offset >= 0, b.Offset >= 0
		switch {
		case aOff != bOff:
			return aOff
		case aOff && a.Offset != b.Offset:
			return a.Offset < b.Offset
		case kindOrder[a.Kind] != kindOrder[b.Kind]:
			return kindOrder[a.Kind] < kindOrder[b.Kind]
		}
		return a.Path < b.Path
	})
	return files, nil
}

// segmentPath is the .log file that goes with an index at base.
func segmentPath(f File) string {
	return filepath.Join(filepath.Dir(f.Path), fmt.Sprintf("%020d.log", f.Offset))
}

// Segments lists the .log files of a directory by base offset.
func Segments(dir string) ([]File, error) {
	files, err := ListDir(dir)
	if err != nil {
		return nil, err
	}
	var out []File
	for _, f := range files {
		if f.Kind == KindSegment {
			out = append(out, f)
		}
	}
	return out, nil
}
