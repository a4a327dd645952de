package mirror

import (
	"testing"

	"github.com/minibroker/minibroker/internal/recordlog"
	"github.com/minibroker/minibroker/internal/vfs"
)

// benchDoc is one mirror of 100 partitions, MIRRORING.
func benchDoc() *doc {
	d := goldenDoc()
	ps := d.Mirrors[0].Topics["orders"].Partitions
	for i := range int32(100) {
		ps[i] = &partitionRecord{State: Mirroring, LastMirroredOffset: -1, BarrierOffset: -1}
	}
	return d
}

// BenchmarkMirrorStateSave: one state save (one partition's record
// changed, of a mirror of 100 partitions), durable before it returns, on
// the real file system: to __mirror_state (the records that changed, one
// batch, the partition's fsync) beside the previous version's save (the
// whole document appended to mirror-state.log as one recordlog frame, its
// fsync), measured in the same run.
func BenchmarkMirrorStateSave(b *testing.B) {
	b.Run("topic", func(b *testing.B) {
		dir := b.TempDir()
		t, err := openOwnStateTopic(vfs.Default, dir)
		if err != nil {
			b.Fatal(err)
		}
		defer t.p.Close()
		st, _, err := loadTopicState(t)
		if err != nil {
			b.Fatal(err)
		}
		d := benchDoc()
		rec := d.Mirrors[0].Topics["orders"].Partitions[7]
		b.ResetTimer()
		for i := range b.N {
			rec.LastMirroredOffset = int64(i)
			if err := st.save(d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("state-log", func(b *testing.B) {
		o := recordlog.Options{FS: vfs.Default, Dir: b.TempDir(), Name: mirrorStateFile, Format: mirrorStateFormat, WriteThrough: true}
		w, _, err := recordlog.Open(o, func(int, []byte) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close(false)
		d := benchDoc()
		rec := d.Mirrors[0].Topics["orders"].Partitions[7]
		b.ResetTimer()
		for i := range b.N {
			rec.LastMirroredOffset = int64(i)
			raw, err := encodeDoc(d)
			if err != nil {
				b.Fatal(err)
			}
			frame := recordlog.AppendFrame(nil, append([]byte{docRecordType}, raw...))
			t, err := w.AppendFrames(frame, 1)
			if err != nil {
				b.Fatal(err)
			}
			if err := w.Wait(t); err != nil {
				b.Fatal(err)
			}
		}
	})
}
