package share

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/minibroker/minibroker/internal/vfs"
)

// FileStore is the layout of the share state an older minibroker kept:
// each share partition's snapshot in its own JSON file under Dir
// (<data-dir>/share-groups), rewritten atomically and fsynced. The
// broker reads it only to move it into __share_group_state
// (TopicStore) at start-up, then removes it.
type FileStore struct {
	FS  vfs.FS
	Dir string
}

type snapshotJSON struct {
	Version int              `json:"version"`
	Group   string           `json:"group"`
	Topic   string           `json:"topic_id"`
	Part    int32            `json:"partition"`
	Start   int64            `json:"start_offset"`
	Batches []stateBatchJSON `json:"state_batches"`
}

type stateBatchJSON struct {
	First int64 `json:"first_offset"`
	Last  int64 `json:"last_offset"`
	State int8  `json:"delivery_state"`
	Count int16 `json:"delivery_count"`
}

func (s FileStore) name(group string, tp TP) string {
	return filepath.Join(s.Dir, hex.EncodeToString([]byte(group))+"_"+hex.EncodeToString(tp.Topic[:])+"_"+strconv.Itoa(int(tp.Partition))+".json")
}

// Save implements Store.
func (s FileStore) Save(group string, tp TP, snap Snapshot) error {
	if err := s.FS.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	doc := snapshotJSON{Version: 1, Group: group, Topic: hex.EncodeToString(tp.Topic[:]), Part: tp.Partition, Start: snap.Start}
	for _, b := range snap.Batches {
		doc.Batches = append(doc.Batches, stateBatchJSON{b.First, b.Last, int8(b.State), b.Count})
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(s.FS, s.Dir, s.name(group, tp), body)
}

// Delete implements Store.
func (s FileStore) Delete(group string, tp TP) error {
	if err := s.FS.Remove(s.name(group, tp)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return s.FS.SyncDir(s.Dir)
}

// Load implements Store: every stored snapshot; a directory that does
// not exist yet holds none. A damaged file is an error (the broker does
// not start rather than redeliver acknowledged records).
func (s FileStore) Load() (map[string]map[TP]Snapshot, error) {
	ents, err := s.FS.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]map[TP]Snapshot{}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(s.Dir, e.Name())
		body, err := vfs.ReadFile(s.FS, path)
		if err != nil {
			return nil, err
		}
		var doc snapshotJSON
		if err := json.Unmarshal(body, &doc); err != nil {
			return nil, fmt.Errorf("share state %s: %w", path, err)
		}
		id, err := hex.DecodeString(doc.Topic)
		if err != nil || len(id) != 16 {
			return nil, fmt.Errorf("share state %s: bad topic id %q", path, doc.Topic)
		}
		var tp TP
		copy(tp.Topic[:], id)
		tp.Partition = doc.Part
		snap := Snapshot{Start: doc.Start}
		for _, b := range doc.Batches {
			snap.Batches = append(snap.Batches, StateBatch{b.First, b.Last, State(b.State), b.Count})
		}
		if out[doc.Group] == nil {
			out[doc.Group] = map[TP]Snapshot{}
		}
		out[doc.Group][tp] = snap
	}
	return out, nil
}
