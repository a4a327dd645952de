package share

import (
	"context"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// Group ids are one namespace across the group types, and each API
// answers another type's group as Kafka's GroupMetadataManager does:
// on a share group, ConsumerGroupHeartbeat gets GROUP_ID_NOT_FOUND,
// JoinGroup INCONSISTENT_GROUP_PROTOCOL, SyncGroup, Heartbeat and
// LeaveGroup UNKNOWN_MEMBER_ID; on a consumer (KIP-848) or classic
// group, ShareGroupHeartbeat gets GROUP_ID_NOT_FOUND. Control: the same
// requests on a fresh group id succeed, so the error comes from the
// other type's group.
func TestShareGroupIDsAreOneNamespace(t *testing.T) {
	c := minibrokertest.Start(t, itest.FastShare("sc")...)
	cl := itest.NewClient(t, c.Addr())
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	share := &itest.ShareRaw{T: t, Cl: cl, Group: "the-share", Member: "m-share-000000000000000000000001"}
	share.Join()

	cgh := func(group string) int16 {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = group, "m-consumer-0000000000000000000001", 0
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 30000, []string{"sc"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	join := func(group, member string) (*kmsg.JoinGroupResponse, error) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, p)
		return req.RequestWith(ctx, cl)
	}
	sgh := func(group string) int16 {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, "m-share-000000000000000000000002", 0, []string{"sc"}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	want := func(what string, got int16, e *kerr.Error) {
		t.Helper()
		if got != e.Code {
			t.Errorf("%s: error %v, want %v", what, kerr.ErrorForCode(got), e)
		}
	}

	want("ConsumerGroupHeartbeat on a share group", cgh("the-share"), kerr.GroupIDNotFound)
	jr, err := join("the-share", "")
	if err != nil {
		t.Fatal(err)
	}
	want("JoinGroup on a share group", jr.ErrorCode, kerr.InconsistentGroupProtocol)
	if jr.MemberID != "" {
		t.Errorf("JoinGroup on a share group answered member id %q, want none", jr.MemberID)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "the-share", "x", 1
	sr, err := sync.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	want("SyncGroup on a share group", sr.ErrorCode, kerr.UnknownMemberID)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "the-share", "x", 1
	hr, err := hb.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	want("Heartbeat on a share group", hr.ErrorCode, kerr.UnknownMemberID)
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group = "the-share"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = "x"
	lv.Members = append(lv.Members, lm)
	lr, err := lv.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	want("LeaveGroup on a share group", lr.ErrorCode, kerr.UnknownMemberID)

	// A consumer group and a classic group: ShareGroupHeartbeat refused.
	want("ConsumerGroupHeartbeat on a new id (control)", cgh("the-consumer"), nil0)
	want("ShareGroupHeartbeat on a consumer group", sgh("the-consumer"), kerr.GroupIDNotFound)
	classic := itest.NewClient(t, c.Addr(), kgo.ConsumerGroup("the-classic"), kgo.ConsumeTopics("sc"))
	defer classic.Close()
	deadline := time.Now().Add(45 * time.Second)
	for {
		l, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, g := range l.Groups {
			found = found || g.Group == "the-classic"
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the classic group never appeared")
		}
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		classic.PollFetches(pctx)
		pcancel()
	}
	want("ShareGroupHeartbeat on a classic group", sgh("the-classic"), kerr.GroupIDNotFound)
	want("ShareGroupHeartbeat on a new id (control)", sgh("another-share"), nil0)
	jr, err = join("another-classic", "")
	if err != nil {
		t.Fatal(err)
	}
	want("JoinGroup on a new id (control)", jr.ErrorCode, kerr.MemberIDRequired)
}

// nil0 is the "no error" a want compares with.
var nil0 = &kerr.Error{Message: "NONE", Code: 0}
