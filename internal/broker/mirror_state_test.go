package broker

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/itopic"
	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// A failed fsync takes __mirror_state-0's log offline for writes;
// reopenPartition (what the mirrors' state topic calls before its next
// save) opens its files anew in the registry, and the reopened partition
// holds what was written, appends and flushes again.
func TestReopenMirrorStatePartition(t *testing.T) {
	fs := errorfs.Wrap(vfs.Default)
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = t.TempDir(), "127.0.0.1:0", ""
	b, err := New(Options{Config: cfg, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	old := b.partitionsOf(mirrorStateTopic).at(0)
	rec := func() []byte {
		kr := kmsg.Record{Key: []byte("k"), Value: []byte("v")}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		return itopic.DataBatch(kr.AppendTo(nil), 1, 1)
	}
	if _, err := old.AppendAsLeader(rec()); err != nil {
		t.Fatal(err)
	}
	fs.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: mirrorStateTopic, Count: 1})
	if err := old.FlushTo(1); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("flush with a failing fsync: %v", err)
	}
	if _, err := old.AppendAsLeader(rec()); err == nil {
		t.Fatal("append after a failed fsync answered nil")
	}
	p, err := b.reopenPartition(mirrorStateTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b.partitionsOf(mirrorStateTopic).at(0) != p || p == old {
		t.Fatal("the registry does not hold the reopened partition")
	}
	if end := p.Offsets().LogEnd; end != 1 {
		t.Fatalf("reopened partition ends at %d, want 1 (the record written before the failed fsync)", end)
	}
	res, err := p.AppendAsLeader(rec())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.FlushTo(res.LastOffset + 1); err != nil {
		t.Fatal(err)
	}
}
