package groups

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestGroupRecordTooLargeOverTCP: a client joins a group with 65 MiB of
// protocol metadata (over the group log's 64 MiB record bound) ending in a
// well-formed group log frame that deletes another group ("a-victim"). The leader's
// SyncGroup is answered UNKNOWN_SERVER_ERROR (Kafka's answer when the group
// metadata record is too large to append), and after a restart the other
// groups' committed offsets, written before and after, are there. On the
// code before the bound this test failed with 'error code 0' and
// "a-victim's offset -1, want 42"; the negative control kept in the tree
// (the bound removed through a seam) is the coordinator's
// TestGroupRecordTooLargeNegativeControl.
func TestGroupRecordTooLargeOverTCP(t *testing.T) {
	const topic = "big-meta"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(itest.NewClient(t, c.Addr()))
	commit := func(group string, at int64) {
		t.Helper()
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: -1})
		r, err := adm.CommitOffsets(ctx, group, os)
		if err == nil {
			err = r.Error()
		}
		if err != nil {
			t.Fatalf("commit %s: %v", group, err)
		}
	}
	commit("a-victim", 42)

	// A GroupDelete record for "a-victim" as the group log frames it:
	// length, CRC-32C, type 4, group string. (The victim's name sorts
	// before "big", so a compaction, which writes groups in name order,
	// would also put the forged record after the victim's offsets.)
	body := append([]byte{4, 0, 8}, "a-victim"...)
	forged := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	forged = binary.BigEndian.AppendUint32(forged, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	forged = append(forged, body...)
	meta := append(make([]byte, 65<<20), forged...)

	cl := itest.NewClient(t, c.Addr())
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "big", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10_000, 10_000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta
	join.Protocols = append(join.Protocols, p)
	var jr *kmsg.JoinGroupResponse
	for range 2 { // v4+: the first join gets MEMBER_ID_REQUIRED and a member id
		resp, err := join.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("join: %v", err)
		}
		jr = resp
		if resp.ErrorCode != kerr.MemberIDRequired.Code {
			break
		}
		join.MemberID = resp.MemberID
	}
	if jr.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(jr.ErrorCode))
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "big", jr.MemberID, jr.Generation
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), jr.Protocol
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = jr.MemberID, []byte("a")
	sync.GroupAssignment = append(sync.GroupAssignment, a)
	sr, err := sync.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	t.Logf("leader's SyncGroup: %v", kerr.ErrorForCode(sr.ErrorCode))
	if sr.ErrorCode != kerr.UnknownServerError.Code {
		t.Errorf("leader's SyncGroup: error code %d, want UNKNOWN_SERVER_ERROR", sr.ErrorCode)
	}
	commit("after", 7)
	cl.Close()

	c.Restart()
	adm = kadm.NewClient(itest.NewClient(t, c.Addr(), kgo.RetryTimeout(30*time.Second)))
	for group, want := range map[string]int64{"a-victim": 42, "after": 7} {
		os, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatalf("fetch %s: %v", group, err)
		}
		got := int64(-1)
		if o, ok := os.Lookup(topic, 0); ok {
			got = o.At
		}
		t.Logf("after restart: %s's offset %d (want %d)", group, got, want)
		if got != want {
			t.Errorf("after restart: %s's offset %d, want %d", group, got, want)
		}
	}
}
