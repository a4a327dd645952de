package mirror

import (
	"context"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorSyncsShareGroups: the mirror syncs share
// groups' start offsets (KIP-1279). On the source a share group
// acknowledged records 0-6 of ledger's 10 (7-9 acquired, not
// acknowledged: its start offset is 7); a share group with a member on
// the destination is skipped. After the sync the destination's group
// starts at 7, and after the failover a member there gets 7-9 and the
// records written after it, never 0-6. Control: a group whose offsets
// were not synced gets 0-6 again there.
func TestMirrorSyncsShareGroups(t *testing.T) {
	const topic = "ledger"
	src := minibrokertest.Start(t, itest.FastShare(topic)...)
	itest.SetShareEarliest(t, src.Addr(), "work")
	itest.GroupsProduce(t, src.Addr(), topic, "a", 10)
	tp, _ := src.Broker().Topic(topic)
	a := &itest.ShareRaw{T: t, Cl: itest.NewClient(t, src.Addr()), Group: "work", Member: "member-a", Topic: tp.ID, TopicName: topic}
	a.Join()
	if got := a.Fetch(10); len(got) != 10 {
		t.Fatalf("source member acquired %d of 10", len(got))
	}
	a.Ack(0, 6, 1)
	a.Leave()
	if start := itest.DescribeShareStart(t, src.Addr(), "work", topic); start != 7 {
		t.Fatalf("source share group starts at %d, want 7", start)
	}

	dst := minibrokertest.Start(t, minibrokertest.Set("group.share.heartbeat.interval.ms", "500"))
	mb := dst.Mirror("from-src", src.Addr()).Start(topic)
	mb.WaitCaughtUp(20 * time.Second)
	// busy: a share group with a member on the destination is left alone.
	itest.SetShareEarliest(t, src.Addr(), "busy")
	b := &itest.ShareRaw{T: t, Cl: itest.NewClient(t, src.Addr()), Group: "busy", Member: "member-b", Topic: tp.ID, TopicName: topic}
	b.Join()
	b.Fetch(10)
	b.Ack(0, 1, 1)
	b.Leave()
	dtp, _ := dst.Broker().Topic(topic)
	busy := &itest.ShareRaw{T: t, Cl: itest.NewClient(t, dst.Addr()), Group: "busy", Member: "member-d", Topic: dtp.ID, TopicName: topic}
	busy.Join()

	if got := describeShareGroupStarts(t, dst.Addr(), "work", topic); got != -1 {
		t.Fatalf("before the sync the destination has work at %d", got)
	}
	n, err := dst.Broker().Mirrors().SyncGroupOffsets(context.Background(), "from-src")
	if err != nil || n != 1 {
		t.Fatalf("sync: %d groups, %v; want 1 (work)", n, err)
	}
	if start := itest.DescribeShareStart(t, dst.Addr(), "work", topic); start != 7 {
		t.Fatalf("destination share group starts at %d, want 7", start)
	}
	if got := describeShareGroupStarts(t, dst.Addr(), "busy", topic); got != -1 {
		t.Fatalf("busy (active on the destination) synced to %d", got)
	}
	busy.Leave()
	// Control: late acknowledges 0-6 on the source after the sync, and
	// is never synced.
	itest.SetShareEarliest(t, src.Addr(), "late")
	itest.SetShareEarliest(t, dst.Addr(), "late")
	l := &itest.ShareRaw{T: t, Cl: itest.NewClient(t, src.Addr()), Group: "late", Member: "member-l", Topic: tp.ID, TopicName: topic}
	l.Join()
	l.Fetch(10)
	l.Ack(0, 6, 1)
	l.Leave()

	mb.Stop(topic)
	itest.GroupsProduce(t, dst.Addr(), topic, "b", 3)
	d := &itest.ShareRaw{T: t, Cl: itest.NewClient(t, dst.Addr()), Group: "work", Member: "member-w", Topic: dtp.ID, TopicName: topic}
	d.Join()
	seen := map[int64]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for len(seen) < 6 && time.Now().Before(deadline) {
		for o := range d.Fetch(100) {
			seen[o] = true
			d.Ack(o, o, 1)
		}
	}
	t.Logf("delivered on the destination after the failover: %d offsets", len(seen))
	for o := range seen {
		if o < 7 {
			t.Errorf("offset %d, acknowledged on the source, delivered on the destination", o)
		}
	}
	// The control: the unsynced group reads 0-6 again on the destination.
	dl := &itest.ShareRaw{T: t, Cl: itest.NewClient(t, dst.Addr()), Group: "late", Member: "member-dl", Topic: dtp.ID, TopicName: topic}
	dl.Join()
	if got := dl.Fetch(100); len(got) == 0 || !containsOffset(got, 0) {
		t.Fatalf("control: an unsynced group on the destination got %v, want 0-6 again", got)
	}
	// 7-9, the barrier at 10, then b-0..b-2 (11-13).
	for _, o := range []int64{7, 8, 9, 11, 12, 13} {
		if !seen[o] {
			t.Errorf("offset %d not delivered on the destination (got %v)", o, seen)
		}
	}
}

// describeShareGroupStarts is the share partition's start offset, -1 when
// the group has none.
func describeShareGroupStarts(t *testing.T, addr, group, topic string) int64 {
	t.Helper()
	return itest.DescribeShareStartOr(t, addr, group, topic)
}

func containsOffset(m map[int64]int16, o int64) bool { _, ok := m[o]; return ok }
