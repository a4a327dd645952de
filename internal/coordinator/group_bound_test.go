package coordinator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/vfs"
)

// openBoundGroups opens the group coordinator with a 1 MiB group log
// record bound (the production bound is 64 MiB) and the given knobs.
func openBoundGroups(t *testing.T, fs vfs.FS, k knobs) *Groups {
	t.Helper()
	k.maxRecord = 1 << 20
	g, err := OpenGroups(GroupsOptions{
		FS: fs, Dir: "/data", TickInterval: 10 * time.Millisecond, private: k,
		Config: GroupConfig{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, OffsetsRetention: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGroupRecordTooLarge: a member joins with protocol metadata that
// makes its group's state record longer than the group log's bound (1 MiB
// here, 64 MiB in production), and the metadata ends with a well-formed
// group log frame deleting another group. The leader's SyncGroup must be
// answered with an error (Kafka: UNKNOWN_SERVER_ERROR) and nothing of it
// written; after a restart, the other groups' committed offsets, written
// before and after, are all there.
func TestGroupRecordTooLarge(t *testing.T) {
	victim, after, syncErr := testGroupRecordTooLarge(t, knobs{})
	if !errors.Is(syncErr, ErrRecordTooLarge) {
		t.Errorf("leader's SyncGroup: %v, want ErrRecordTooLarge (UNKNOWN_SERVER_ERROR)", syncErr)
	}
	if victim != 42 || after != 7 {
		t.Errorf("after restart: victim's offset %d, after's %d; want 42 and 7", victim, after)
	}
}

// TestGroupRecordTooLargeNegativeControl: with the bound removed (the core
// stores the record, the writer takes it), the same scenario answers the
// SyncGroup with success and the restart loses the victim's offset to the
// frame hidden in the metadata.
func TestGroupRecordTooLargeNegativeControl(t *testing.T) {
	victim, after, syncErr := testGroupRecordTooLarge(t, knobs{skipCoreBound: true, skipWriteBound: true})
	t.Logf("without the bound: sync err %v, victim %d, after %d", syncErr, victim, after)
	if syncErr != nil || victim == 42 {
		t.Fatal("the scenario shows no loss without the bound: it proves nothing")
	}
}

func testGroupRecordTooLarge(t *testing.T, k knobs) (victim, after int64, syncErr error) {
	fs := memFS(t)
	g := openBoundGroups(t, fs, k)
	tp := TopicPartition{Topic: "t", Partition: 0}
	if err := g.CommitOffsetsAdmin("victim", map[TopicPartition]OffsetAndMetadata{tp: {Offset: 42, LeaderEpoch: -1}}); err != nil {
		t.Fatal(err)
	}
	forged := appendFrame(nil, &record{typ: recGroupDelete, group: "victim"})
	meta := append(make([]byte, 1<<20+100), forged...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	jr := g.Join(ctx, JoinRequest{Group: "big", ClientID: "c", ProtocolType: "consumer",
		Protocols: []Protocol{{Name: "range", Metadata: meta}}, SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second})
	if jr.Err != nil {
		t.Fatalf("join: %v", jr.Err)
	}
	sr := g.Sync(ctx, SyncRequest{Group: "big", MemberID: jr.MemberID, Generation: jr.Generation,
		Assignments: map[string][]byte{jr.MemberID: []byte("a")}})
	t.Logf("leader's SyncGroup: err %v", sr.Err)
	if err := g.CommitOffsetsAdmin("after", map[TopicPartition]OffsetAndMetadata{tp: {Offset: 7, LeaderEpoch: -1}}); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	g2 := openBoundGroups(t, fs, knobs{})
	defer g2.Close()
	victim, after = -1, -1
	if om, ok := g2.ListGroupOffsets("victim")[tp]; ok {
		victim = om.Offset
	}
	if om, ok := g2.ListGroupOffsets("after")[tp]; ok {
		after = om.Offset
	}
	t.Logf("after restart: victim's offset %d (want 42), after's offset %d (want 7)", victim, after)
	return victim, after, sr.Err
}

// TestGroupRecordTooLargeRefusedByLog: with the core's check removed, the
// group log's writer refuses the record: the SyncGroup is answered with
// the error (no waiter blocks on a refused append), the log stays usable,
// and nothing is lost at the restart.
func TestGroupRecordTooLargeRefusedByLog(t *testing.T) {
	done := make(chan struct{})
	var syncErr error
	var victim, after int64
	go func() {
		defer close(done)
		victim, after, syncErr = testGroupRecordTooLarge(t, knobs{skipCoreBound: true})
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("blocked after the log refused a record")
	}
	if !errors.Is(syncErr, ErrRecordTooLarge) || victim != 42 || after != 7 {
		t.Errorf("sync err %v, victim %d, after %d; want ErrRecordTooLarge, 42, 7", syncErr, victim, after)
	}
}

// TestGroupRecordSize: groupRecordSize is the length appendPayload writes.
func TestGroupRecordSize(t *testing.T) {
	for _, m := range []*groupMetadata{
		{},
		{protocolType: "consumer", protocol: "range", leader: "m1", members: []memberMetadata{
			{id: "m1", instanceID: "i", clientID: "c", clientHost: "/h", subscription: []byte("sub"), assignment: nil},
			{id: "m2", subscription: nil, assignment: []byte("asg")},
		}},
	} {
		r := record{typ: recGroupMetadata, group: "grp", meta: m}
		body := appendPayload([]byte{byte(r.typ)}, &r)
		if got := groupRecordSize("grp", m); got != len(body) {
			t.Errorf("groupRecordSize %d, encoded %d", got, len(body))
		}
	}
}

// TestStaticRejoinRecordTooLarge: a static member rejoining a Stable group
// with metadata that makes the group's record too long is answered with
// the error, and the replacement is undone: the old member id stays, and
// nothing is stored.
func TestStaticRejoinRecordTooLarge(t *testing.T) {
	ids := 0
	c := newGroupCore(GroupConfig{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute},
		func(p string) string { ids++; return p + "-" + string(rune('0'+ids)) })
	c.maxRecord = 1 << 10
	now := time.Unix(1000, 0)
	join := func(meta []byte, w Waiter) {
		c.Join(now, JoinRequest{Group: "g", InstanceID: "i", ClientID: "c", ProtocolType: "consumer",
			Protocols: []Protocol{{Name: "range", Metadata: meta}}, SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second}, w)
	}
	join([]byte("small"), 1)
	r := c.takeReplies()
	if len(r) != 1 || r[0].Join.Err != nil {
		t.Fatalf("first join: %+v", r)
	}
	old := r[0].Join.MemberID
	c.Sync(now, SyncRequest{Group: "g", MemberID: old, InstanceID: "i", Generation: r[0].Join.Generation,
		Assignments: map[string][]byte{old: []byte("a")}}, 2)
	c.takeReplies()
	c.takeRecords()
	join(make([]byte, 2<<10), 3)
	r = c.takeReplies()
	if len(r) != 1 || !errors.Is(r[0].Join.Err, ErrRecordTooLarge) {
		t.Fatalf("rejoin with large metadata: %+v", r)
	}
	g := c.groups["g"]
	if g.static["i"] != old || g.members[old] == nil || len(g.members) != 1 || g.leader != old || g.state != StateStable {
		t.Errorf("after the refused rejoin: static %v, members %d, leader %q, state %v; want the old member %q", g.static, len(g.members), g.leader, g.state, old)
	}
	if recs := c.takeRecords(); len(recs) != 0 {
		t.Errorf("%d records stored", len(recs))
	}
}
