package logtool

import (
	"fmt"
	"os"
	"reflect"

	"github.com/minibroker/minibroker/internal/psm"
)

// replaySnapshot rebuilds the producer state a snapshot at offset should
// hold by replaying the segments of dir below offset with origin
// REPLICATION, as the partition's recovery does. When the log no longer
// starts at 0 (retention), the replay starts from the newest other
// snapshot at or below the first segment's base, as recovery would. It
// returns the entries and the offset the replay started from.
func replaySnapshot(dir string, offset int64, maxBytes int) ([]psm.Entry, int64, error) {
	segs, err := Segments(dir)
	if err != nil {
		return nil, 0, err
	}
	m := psm.NewManager(psm.Config{}, nil, nil)
	from := int64(0)
	if len(segs) > 0 && segs[0].Offset > 0 {
		if base, entries, ok := snapshotAtOrBelow(dir, segs[0].Offset, offset); ok {
			m, from = psm.NewManagerFromEntries(psm.Config{}, entries, base), base
		} else {
			from = segs[0].Offset
		}
	}
	for _, s := range segs {
		if s.Offset >= offset {
			break
		}
		err := scanFile(s.Path, func(b *Batch) error {
			h := &b.Header
			if b.Raw == nil || !b.CRCValid || h.BaseOffset < from || h.LastOffset() >= offset {
				return nil
			}
			p, err := m.Prepare(psm.OriginReplication, []psm.PreparedBatch{{Header: *h, Raw: b.Raw}}, h.MaxTimestamp)
			if err != nil {
				return fmt.Errorf("replay offset %d: %w", h.BaseOffset, err)
			}
			p.Apply()
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	return m.Entries(), from, nil
}

// snapshotAtOrBelow decodes the newest valid snapshot in dir at or below
// limit, other than the one at self.
func snapshotAtOrBelow(dir string, limit, self int64) (int64, []psm.Entry, bool) {
	files, err := ListDir(dir)
	if err != nil {
		return 0, nil, false
	}
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		if f.Kind != KindSnapshot || f.Offset > limit || f.Offset == self {
			continue
		}
		data, err := os.ReadFile(f.Path)
		if err != nil {
			continue
		}
		if entries, err := psm.DecodeSnapshot(data); err == nil {
			return f.Offset, entries, true
		}
	}
	return 0, nil, false
}

// scanFile opens a segment read-only and scans it.
func scanFile(path string, fn func(*Batch) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	_, err = ScanSegment(f, st.Size(), fn)
	return err
}

// compareSnapshot lists the differences between a snapshot's producers
// and a replay's.
func compareSnapshot(snap, replay []psm.Entry) []string {
	byID := func(es []psm.Entry) map[int64]psm.Entry {
		m := make(map[int64]psm.Entry, len(es))
		for _, e := range es {
			if len(e.Batches) == 0 {
				e.Batches = nil
			}
			m[e.ProducerID] = e
		}
		return m
	}
	s, r := byID(snap), byID(replay)
	var diffs []string
	for _, e := range replay {
		got, ok := s[e.ProducerID]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("producer %d: in the replay, not in the snapshot (expired before the snapshot was written?)", e.ProducerID))
			continue
		}
		if want := r[e.ProducerID]; !reflect.DeepEqual(got, want) {
			diffs = append(diffs, fmt.Sprintf("producer %d: snapshot %s, replay %s", e.ProducerID, entryString(got), entryString(want)))
		}
	}
	for _, e := range snap {
		if _, ok := r[e.ProducerID]; !ok {
			diffs = append(diffs, fmt.Sprintf("producer %d: in the snapshot, not in the replay", e.ProducerID))
		}
	}
	return diffs
}

func entryString(e psm.Entry) string {
	return fmt.Sprintf("{epoch %d coordinatorEpoch %d txnFirstOffset %d lastTimestamp %d batches %v}",
		e.Epoch, e.CoordinatorEpoch, e.CurrentTxnFirstOffset, e.LastTimestamp, e.Batches)
}
