package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetFetchReq asks group for partition 0 of topics (every committed
// partition when topics is nil) at version v.
func offsetFetchReq(v int16, group string, topics ...string) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	if v >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		for _, t := range topics {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = t, []int32{0}
			g.Topics = append(g.Topics, gt)
		}
		req.Groups = append(req.Groups, g)
		return req
	}
	req.Group = group
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = t, []int32{0}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// fmtOffsetFetch: "code 0: t/0 1 epoch -1 md \"\" code 0; …" (v8+: the
// first group's).
func fmtOffsetFetch(resp *kmsg.OffsetFetchResponse) string {
	var parts []string
	p := func(topic string, part int32, off int64, epoch int32, md *string, code int16) {
		m := "null"
		if md != nil {
			m = fmt.Sprintf("%q", *md)
		}
		parts = append(parts, fmt.Sprintf("%s/%d %d epoch %d md %s code %d", topic, part, off, epoch, m, code))
	}
	code := resp.ErrorCode
	if len(resp.Groups) > 0 {
		g := resp.Groups[0]
		code = g.ErrorCode
		for _, t := range g.Topics {
			for _, x := range t.Partitions {
				p(t.Topic, x.Partition, x.Offset, x.LeaderEpoch, x.Metadata, x.ErrorCode)
			}
		}
	}
	for _, t := range resp.Topics {
		for _, x := range t.Partitions {
			p(t.Topic, x.Partition, x.Offset, x.LeaderEpoch, x.Metadata, x.ErrorCode)
		}
	}
	return fmt.Sprintf("code %d: %s", code, strings.Join(parts, "; "))
}

// TestOffsetFetchAuthorization: group g-of has offsets on t (1) and s
// (2); bob may DESCRIBE the group and t, not s; alice may DESCRIBE t but
// not the group. Each version answers as Kafka: a named s is not read
// (offset -1, epoch -1, metadata "", TOPIC_AUTHORIZATION_FAILED) — v0–v7
// kept its offset before; a fetch of every partition leaves s out; a
// denied group is GROUP_AUTHORIZATION_FAILED per partition (v1), as the
// top-level code with no topics (v2–v7) or the group's code (v8+).
// Negative control: with OffsetFetch's rule switched off bob reads s's
// offset and alice the group's.
func TestOffsetFetchAuthorization(t *testing.T) {
	e := startAuthz(t, true)
	e.createTopic("t", 1)
	e.createTopic("s", 1)
	e.commitOffset("g-of", "t", 1)
	e.commitOffset("g-of", "s", 2)
	d := kmsg.ACLOperationDescribe
	e.setACLs("bob", groupsACL("g-", d), topicACL("t", d))
	e.setACLs("alice", topicACL("t", d))
	const (
		tOK     = `t/0 1 epoch -1 md "" code 0`
		sOK     = `s/0 2 epoch -1 md "" code 0`
		sDenied = `s/0 -1 epoch -1 md "" code 29`
	)
	for _, v := range []int16{1, 2, 5, 7, 8, 9} {
		fetch := func(user string, topics ...string) string {
			resp := e.send(user, offsetFetchReq(v, "g-of", topics...), 9, v).(*kmsg.OffsetFetchResponse)
			if resp.Version != v {
				t.Fatalf("sent v%d, answered v%d", v, resp.Version)
			}
			return fmtOffsetFetch(resp)
		}
		check := func(what, got, want string) {
			t.Helper()
			if got != want {
				t.Errorf("v%d %s: %s, want %s", v, what, got, want)
			}
		}
		check("bob, t and s named", fetch("bob", "t", "s"), "code 0: "+tOK+"; "+sDenied)
		if v >= 2 {
			check("bob, every partition", fetch("bob"), "code 0: "+tOK)
		}
		groupDenied := "code 30: "
		if v < 2 {
			groupDenied = `code 0: t/0 -1 epoch -1 md "" code 30` // v0–v1 have no top-level code
		}
		check("alice, group denied", fetch("alice", "t"), groupDenied)

		e.skip.Store(9)
		check("rule off: bob, t and s named", fetch("bob", "t", "s"), "code 0: "+tOK+"; "+sOK)
		if v >= 2 {
			check("rule off: bob, every partition", fetch("bob"), "code 0: "+sOK+"; "+tOK)
		}
		check("rule off: alice, group denied", fetch("alice", "t"), "code 0: "+tOK)
		e.skip.Store(-1)
	}
}
