package broker

// The share coordinator's __share_group_state (share.TopicStore) over the
// topic's partitions (internal/itopic), and the migration of the
// per-partition files an older minibroker kept under
// <data-dir>/share-groups (share.FileStore) into it.
//
// The migration runs at start-up, before the share coordinator loads,
// whenever that directory exists. It is safe to cut after any file
// operation (kill -9): the files' states are written to the topic as
// ShareSnapshot records (only those the topic does not already hold),
// fsynced, and only then are the files removed, each, then the
// directory. A restart cut before the topic was synced finds the files
// whole and writes them again; one cut during the removals finds the
// remaining files equal to what the topic holds and only removes them.
// The files are never the store again once the topic holds their state.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/itopic"
	"github.com/minibroker/minibroker/internal/share"
)

// shareStateDir is where an older minibroker kept share state.
const shareStateDir = "share-groups"

type shareStateTopicLog struct{ itopic.Log }

func (b *Broker) shareStateTopicLog() share.TopicLog {
	return shareStateTopicLog{itopic.Log{Topic: shareStateTopic, Parts: b.partitionsOf(shareStateTopic)}}
}

// DeleteBefore moves partition p's log start up to off (the share
// coordinator's pruning).
func (l shareStateTopicLog) DeleteBefore(p int32, off int64) error {
	if p < 0 || int(p) >= len(l.Parts) {
		return fmt.Errorf("%s has no partition %d", l.Topic, p)
	}
	_, err := l.Parts[p].DeleteRecordsBefore(off)
	return err
}

// shareMigrationSeams are the migration's test hooks.
type shareMigrationSeams struct {
	// start is called when the migration starts (a crash test cuts the
	// file operations from there).
	start func()
	// removeFirst removes the files before the topic holds their state:
	// the negative control of the crash test.
	removeFirst bool
}

// migrateShareStateFiles moves the share state files into the topic.
func (b *Broker) migrateShareStateFiles() error {
	dir := filepath.Join(b.dataDir, shareStateDir)
	ents, err := b.fs.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("share state files: %w", err)
	}
	if b.knobs.shareMigration.start != nil {
		b.knobs.shareMigration.start()
	}
	files, err := share.FileStore{FS: b.fs, Dir: dir}.Load()
	if err != nil {
		return fmt.Errorf("share state files: %w", err)
	}
	remove := func() error {
		for _, e := range ents {
			if err := b.fs.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		if err := b.fs.SyncDir(dir); err != nil {
			return err
		}
		if err := b.fs.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return b.fs.SyncDir(b.dataDir)
	}
	if b.knobs.shareMigration.removeFirst {
		if err := remove(); err != nil {
			return fmt.Errorf("share state files: %w", err)
		}
	}
	if _, err := b.shareStore.Load(); err != nil {
		return err
	}
	n, err := b.shareStore.Import(files)
	if err != nil {
		return fmt.Errorf("moving share state to %s: %w", shareStateTopic, err)
	}
	if !b.knobs.shareMigration.removeFirst {
		if err := remove(); err != nil {
			return fmt.Errorf("share state files: %w", err)
		}
	}
	b.logger.Info("share state moved from its files to "+shareStateTopic,
		zap.Int("share_partitions", countShareStates(files)), zap.Int("records_written", n))
	return nil
}

func countShareStates(m map[string]map[share.TP]share.Snapshot) int {
	n := 0
	for _, parts := range m {
		n += len(parts)
	}
	return n
}
