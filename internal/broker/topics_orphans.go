package broker

import (
	"path/filepath"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// removeOrphanPartitions removes the partition directories topics.json
// does not list: those of a creation (CreateTopics, CreatePartitions)
// that a crash or a shutdown interrupted before topics.json listed them,
// and those of a deletion interrupted after topics.json stopped listing
// them. topics.json is written only once every partition of a creation
// exists, and a partition is visible to clients only after that, so no
// record in an unlisted directory was ever acknowledged to anyone or is
// reachable by any client. Each removal is logged with its reason.
//
// listed maps each topic in topics.json to its partition count; haveFile
// is false when there is no topics.json: then only directories without
// records are removed (a first creation that crashed), and one holding
// records is left in place with a warning, in case topics.json itself was
// lost.
func (b *Broker) removeOrphanPartitions(listed map[string]int, haveFile bool) {
	entries, err := b.fs.ReadDir(b.dataDir)
	if err != nil {
		b.logger.Warn("listing the data dir for orphan partitions", zap.Error(err))
		return
	}
	removed := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		topic, index, ok := parsePartitionDir(e.Name())
		if !ok {
			continue
		}
		n, known := listed[topic]
		if known && index < n {
			continue
		}
		reason := "topic not in " + topicsFile
		if known {
			reason = "partition past the topic's count in " + topicsFile
		}
		dir := filepath.Join(b.dataDir, e.Name())
		if !haveFile && b.holdsRecords(dir) {
			b.logger.Warn("partition directory not in any topic kept: it holds records and there is no "+topicsFile,
				zap.String("dir", dir))
			continue
		}
		if err := b.fs.RemoveAll(dir); err != nil {
			b.logger.Warn("removing an orphan partition directory", zap.String("dir", dir), zap.Error(err))
			continue
		}
		removed++
		b.logger.Warn("removed an orphan partition directory (an interrupted topic creation or deletion)",
			zap.String("dir", dir), zap.String("reason", reason))
	}
	if removed > 0 {
		if err := b.fs.SyncDir(b.dataDir); err != nil {
			b.logger.Warn("syncing the data dir", zap.Error(err))
		}
		b.logger.Warn("removed orphan partition directories", zap.Int("count", removed))
	}
}

// parsePartitionDir splits a partition directory's name, "topic-N".
func parsePartitionDir(name string) (string, int, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 0 || strconv.Itoa(n) != name[i+1:] {
		return "", 0, false
	}
	if validTopicName(name[:i]) != nil {
		return "", 0, false
	}
	return name[:i], n, true
}

// holdsRecords reports whether a partition directory has a non-empty
// segment (.log) file.
func (b *Broker) holdsRecords(dir string) bool {
	entries, err := b.fs.ReadDir(dir)
	if err != nil {
		return true // unknown: keep it
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		if fi, err := b.fs.Stat(filepath.Join(dir, e.Name())); err != nil || fi.Size() > 0 {
			return true
		}
	}
	return false
}
