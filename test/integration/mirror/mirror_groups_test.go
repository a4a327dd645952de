package mirror

import (
	"context"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorSyncsGroupOffsets: a consumer group's committed offsets at the
// source are copied to the mirror (clamped to what the mirror has, only
// for included groups, never over a group active locally), so a consumer
// that fails over resumes where it was.
func TestMirrorSyncsGroupOffsets(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	b := minibrokertest.Start(t)
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "orders", 0, "o", 10)

	adm := kadm.NewClient(itest.NewClient(t, a.Addr()))
	ctx := context.Background()
	commit := func(group string, off int64) {
		t.Helper()
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "orders", Partition: 0, At: off, LeaderEpoch: -1})
		if r, err := adm.CommitOffsets(ctx, group, os); err != nil || r.Error() != nil {
			t.Fatalf("commit %s: %v %v", group, err, r.Error())
		}
	}
	commit("billing", 7)
	commit("audit-x", 4)
	commit("beyond", 12) // past the end: clamped to the mirror's log end

	m := b.Broker().Mirrors()
	if err := m.CreateWith("from-a", []string{a.Addr()}, mirror.CreateOptions{GroupsExclude: []string{"audit-.*"}}); err != nil {
		t.Fatal(err)
	}
	b.Mirror("from-a").Start("orders").WaitCaughtUp(itest.Timeout)
	if _, err := m.SyncGroupOffsets(ctx, "from-a"); err != nil {
		t.Fatal(err)
	}
	badm := kadm.NewClient(itest.NewClient(t, b.Addr()))
	fetched := func(group string) int64 {
		t.Helper()
		resp, err := badm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		o, ok := resp.Lookup("orders", 0)
		if !ok {
			return -1
		}
		return o.At
	}
	if got := fetched("billing"); got != 7 {
		t.Fatalf("billing offset on the mirror %d, want 7", got)
	}
	if got := fetched("audit-x"); got != -1 {
		t.Fatalf("excluded group synced: %d", got)
	}
	if got := fetched("beyond"); got != 10 {
		t.Fatalf("beyond: %d", got)
	}

	// A group consuming on the mirror is left alone.
	cons := itest.NewClient(t, b.Addr(), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.DisableAutoCommit(), kgo.SessionTimeout(6*time.Second))
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	fs := cons.PollFetches(pctx) // joins the group; resumes at the synced offset
	cancel()
	recs := fs.Records()
	if len(recs) == 0 || recs[0].Offset != 7 {
		t.Fatalf("failed-over consumer resumed at %v, want offset 7", recs)
	}
	commit("billing", 9)
	if _, err := m.SyncGroupOffsets(ctx, "from-a"); err != nil {
		t.Fatal(err)
	}
	if got := fetched("billing"); got != 7 {
		t.Fatalf("sync overwrote an active group's offset: %d", got)
	}
}
