package security

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// authzCase is one API sent by alice (allowed by the ACLs) and by bob
// (no ACL): with the authorizer on bob gets want and changed must not
// see a change; with it off bob succeeds too.
type authzCase struct {
	name string
	do   func(ctx context.Context, cl *kgo.Client, user string) error
	want error
	// state reads what a denied write must not change ("" for reads).
	state func(ctx context.Context) string
}

// notDenied are the cases whose bare request fails even when allowed
// (a JoinGroup without a member id answers MEMBER_ID_REQUIRED, EndTxn
// for an unknown producer INVALID_PRODUCER_ID_MAPPING): they pass when
// the error is anything but the authorization code.
var notDenied = map[string]bool{"JoinGroup": true, "Heartbeat": true, "SyncGroup": true, "LeaveGroup": true,
	"AddOffsetsToTxn": true, "EndTxn": true, "DescribeTransactions": true, "DeleteGroups": true}

// direct sends req to the broker itself (not routed through a
// FindCoordinator, which would answer for a group request) and returns
// the response's error: its top-level code or its first entry's.
func direct(ctx context.Context, cl *kgo.Client, req kmsg.Request) error {
	if err := cl.Ping(ctx); err != nil {
		return err
	}
	bs := cl.DiscoveredBrokers()
	if len(bs) == 0 {
		return errors.New("no broker discovered")
	}
	resp, err := bs[0].Request(ctx, req)
	if err != nil {
		return err
	}
	switch r := resp.(type) {
	case *kmsg.JoinGroupResponse:
		return kerr.ErrorForCode(r.ErrorCode)
	case *kmsg.HeartbeatResponse:
		return kerr.ErrorForCode(r.ErrorCode)
	case *kmsg.SyncGroupResponse:
		return kerr.ErrorForCode(r.ErrorCode)
	case *kmsg.LeaveGroupResponse:
		return kerr.ErrorForCode(r.ErrorCode)
	case *kmsg.DeleteGroupsResponse:
		if len(r.Groups) != 1 {
			return fmt.Errorf("%d groups", len(r.Groups))
		}
		return kerr.ErrorForCode(r.Groups[0].ErrorCode)
	case *kmsg.EndTxnResponse:
		return kerr.ErrorForCode(r.ErrorCode)
	case *kmsg.AddOffsetsToTxnResponse:
		return kerr.ErrorForCode(r.ErrorCode)
	case *kmsg.DescribeTransactionsResponse:
		if len(r.TransactionStates) != 1 {
			return fmt.Errorf("%d transaction states", len(r.TransactionStates))
		}
		return kerr.ErrorForCode(r.TransactionStates[0].ErrorCode)
	}
	return fmt.Errorf("unexpected %T", resp)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestAuthorizationPerAPI: with the ACLs below alice may use topics
// "a-*", group "g" and transactional ids "tx-*"; bob has none. Each API
// a client sends runs as alice (succeeds) and as bob (Kafka's code, no
// change); the negative control runs the same with the authorizer off and
// sees every bob call succeed.
func TestAuthorizationPerAPI(t *testing.T) {
	for _, on := range []bool{true, false} {
		name := "authorizer-on"
		if !on {
			name = "authorizer-off"
		}
		t.Run(name, func(t *testing.T) {
			runAuthzCases(t, itest.AclBroker(t, on, minibrokertest.Set("auto.create.topics.enable", "false")), on)
		})
	}
}

func runAuthzCases(t *testing.T, c *minibrokertest.Cluster, on bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := kadm.NewClient(itest.AclClient(t, c, "admin"))
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, "a-t"); err != nil {
		t.Fatal(err)
	}
	if on {
		res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("a-").
			ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAll))
		itest.MustACLs(t, err, res)
		res, err = admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Groups("g").
			ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpAll))
		itest.MustACLs(t, err, res)
		res, err = admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").TransactionalIDs("tx-").
			ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite, kadm.OpDescribe))
		itest.MustACLs(t, err, res)
		res, err = admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Clusters().
			ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe))
		itest.MustACLs(t, err, res)
	}
	endOffset := func(ctx context.Context) string {
		o, err := admin.ListEndOffsets(ctx, "a-t")
		if err != nil {
			return err.Error()
		}
		l, _ := o.Lookup("a-t", 0)
		return time.Duration(l.Offset).String()
	}
	// fresh: kgo answers a Metadata it made recently from its cache.
	fresh := func() *kadm.Client { return kadm.NewClient(itest.AclClient(t, c, "admin")) }
	partitions := func(ctx context.Context) string {
		d, err := fresh().ListTopics(ctx, "a-t")
		if err != nil {
			return err.Error()
		}
		return time.Duration(len(d["a-t"].Partitions)).String()
	}
	committed := func(ctx context.Context) string {
		o, err := admin.FetchOffsets(ctx, "g")
		if err != nil {
			return err.Error()
		}
		l, _ := o.Lookup("a-t", 0)
		return time.Duration(l.At).String()
	}
	md, err := admin.ListTopics(ctx, "a-t")
	if err != nil {
		t.Fatal(err)
	}
	topicID := [16]byte(md["a-t"].ID)
	cases := []authzCase{
		{"Produce", func(ctx context.Context, cl *kgo.Client, _ string) error {
			return cl.ProduceSync(ctx, &kgo.Record{Topic: "a-t", Value: []byte("v")}).FirstErr()
		}, kerr.TopicAuthorizationFailed, endOffset},
		{"InitProducerId (idempotent)", func(ctx context.Context, cl *kgo.Client, _ string) error {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionTimeoutMillis = -1
			resp, err := req.RequestWith(ctx, cl)
			return firstErr(err, errCode(resp, err))
		}, kerr.ClusterAuthorizationFailed, nil},
		{"InitProducerId (transactional)", func(ctx context.Context, cl *kgo.Client, _ string) error {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("tx-1"), 10000
			resp, err := req.RequestWith(ctx, cl)
			return firstErr(err, errCode(resp, err))
		}, kerr.TransactionalIDAuthorizationFailed, nil},
		{"Fetch", func(ctx context.Context, cl *kgo.Client, _ string) error {
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = 12, -1, 10, 1<<20
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic, ft.TopicID = "a-t", topicID
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.PartitionMaxBytes = 1 << 20
			ft.Partitions = append(ft.Partitions, fp)
			req.Topics = append(req.Topics, ft)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		}, kerr.TopicAuthorizationFailed, nil},
		{"ListOffsets", func(ctx context.Context, cl *kgo.Client, _ string) error {
			o, err := kadm.NewClient(cl).ListEndOffsets(ctx, "a-t")
			if err != nil {
				return err
			}
			return o.Error()
		}, kerr.TopicAuthorizationFailed, nil},
		{"Metadata lists only DESCRIBE-able topics", func(ctx context.Context, cl *kgo.Client, _ string) error {
			d, err := kadm.NewClient(cl).ListTopics(ctx)
			if err != nil {
				return err
			}
			if !d.Has("a-t") {
				return kerr.TopicAuthorizationFailed
			}
			return nil
		}, kerr.TopicAuthorizationFailed, nil},
		{"DescribeConfigs", func(ctx context.Context, cl *kgo.Client, _ string) error {
			rc, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, "a-t")
			if err != nil {
				return err
			}
			return rc[0].Err
		}, kerr.TopicAuthorizationFailed, nil},
		{"IncrementalAlterConfigs", func(ctx context.Context, cl *kgo.Client, user string) error {
			v := "1000" + map[string]string{"alice": "1", "bob": "2"}[user]
			r, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &v}}, "a-t")
			if err != nil {
				return err
			}
			return r[0].Err
		}, kerr.TopicAuthorizationFailed, func(ctx context.Context) string {
			rc, err := admin.DescribeTopicConfigs(ctx, "a-t")
			if err != nil {
				return err.Error()
			}
			for _, c := range rc[0].Configs {
				if c.Key == "retention.ms" && c.Value != nil {
					return *c.Value
				}
			}
			return ""
		}},
		{"OffsetCommit", func(ctx context.Context, cl *kgo.Client, user string) error {
			// kmsg, not kadm: kadm drops a topic its client may not
			// DESCRIBE before sending.
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation = "g", -1
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = "a-t"
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = map[string]int64{"alice": 1, "bob": 2}[user]
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		}, kerr.GroupAuthorizationFailed, committed},
		{"OffsetFetch", func(ctx context.Context, cl *kgo.Client, _ string) error {
			_, err := kadm.NewClient(cl).FetchOffsets(ctx, "g")
			return err
		}, kerr.GroupAuthorizationFailed, nil},
		{"FindCoordinator", func(ctx context.Context, cl *kgo.Client, _ string) error {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey = "g"
			resp, err := req.RequestWith(ctx, cl)
			return firstErr(err, errCode(resp, err))
		}, kerr.GroupAuthorizationFailed, nil},
		{"DescribeGroups", func(ctx context.Context, cl *kgo.Client, _ string) error {
			d, err := kadm.NewClient(cl).DescribeGroups(ctx, "g")
			if err != nil {
				return err
			}
			return d.Error()
		}, kerr.GroupAuthorizationFailed, nil},
		{"CreatePartitions", func(ctx context.Context, cl *kgo.Client, user string) error {
			// kmsg, not kadm: kadm's own Metadata first would answer for
			// the broker's CreatePartitions.
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.TimeoutMillis = 5000
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = "a-t", 2
			if user == "bob" || !on {
				rt.Count = 3
			}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			return kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}, kerr.TopicAuthorizationFailed, partitions},
		{"CreateTopics", func(ctx context.Context, cl *kgo.Client, user string) error {
			r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "a-new-"+user)
			return firstErr(err, r.Err)
		}, kerr.TopicAuthorizationFailed, func(ctx context.Context) string {
			d, _ := fresh().ListTopics(ctx)
			return time.Duration(len(d)).String()
		}},
		{"DeleteRecords", func(ctx context.Context, cl *kgo.Client, _ string) error {
			var o kadm.Offsets
			o.Add(kadm.Offset{Topic: "a-t", Partition: 0, At: 0})
			r, err := kadm.NewClient(cl).DeleteRecords(ctx, o)
			if err != nil {
				return err
			}
			return r.Error()
		}, kerr.TopicAuthorizationFailed, nil},
		{"JoinGroup", func(ctx context.Context, cl *kgo.Client, _ string) error {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = "g", 10000, 10000, "consumer"
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = "range", []byte{0, 0}
			req.Protocols = append(req.Protocols, p)
			return direct(ctx, cl, req)
		}, kerr.GroupAuthorizationFailed, nil},
		{"Heartbeat", func(ctx context.Context, cl *kgo.Client, _ string) error {
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.MemberID = "g", "m"
			return direct(ctx, cl, req)
		}, kerr.GroupAuthorizationFailed, nil},
		{"SyncGroup", func(ctx context.Context, cl *kgo.Client, _ string) error {
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group, req.MemberID = "g", "m"
			return direct(ctx, cl, req)
		}, kerr.GroupAuthorizationFailed, nil},
		{"LeaveGroup", func(ctx context.Context, cl *kgo.Client, _ string) error {
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Group = "g"
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = "m"
			req.Members = append(req.Members, m)
			return direct(ctx, cl, req)
		}, kerr.GroupAuthorizationFailed, nil},
		{"AddOffsetsToTxn", func(ctx context.Context, cl *kgo.Client, _ string) error {
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.Group = "tx-1", 1, "g"
			return direct(ctx, cl, req)
		}, kerr.TransactionalIDAuthorizationFailed, nil},
		{"EndTxn", func(ctx context.Context, cl *kgo.Client, _ string) error {
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID = "tx-1", 1
			return direct(ctx, cl, req)
		}, kerr.TransactionalIDAuthorizationFailed, nil},
		{"DescribeTransactions", func(ctx context.Context, cl *kgo.Client, _ string) error {
			req := kmsg.NewPtrDescribeTransactionsRequest()
			req.TransactionalIDs = []string{"tx-1"}
			return direct(ctx, cl, req)
		}, kerr.TransactionalIDAuthorizationFailed, nil},
		{"ListGroups shows only DESCRIBE-able groups", func(ctx context.Context, cl *kgo.Client, _ string) error {
			req := kmsg.NewPtrListGroupsRequest()
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			for _, g := range resp.Groups {
				if g.Group == "g" {
					return nil
				}
			}
			return kerr.GroupAuthorizationFailed
		}, kerr.GroupAuthorizationFailed, nil},
		{"DeleteGroups", func(ctx context.Context, cl *kgo.Client, user string) error {
			if user == "alice" {
				return nil // alice's would delete the group bob's calls are checked against
			}
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.Groups = []string{"g"}
			return direct(ctx, cl, req)
		}, kerr.GroupAuthorizationFailed, committed},
		{"DescribeAcls", func(ctx context.Context, cl *kgo.Client, _ string) error {
			code, _ := itest.DescribeACLs(t, cl, func(*kmsg.DescribeACLsRequest) {})
			if code == kerr.SecurityDisabled.Code {
				return nil // authorizer off: no ACLs to describe
			}
			return kerr.ErrorForCode(code)
		}, kerr.ClusterAuthorizationFailed, nil},
		{"DeleteTopics", func(ctx context.Context, cl *kgo.Client, user string) error {
			if user == "alice" && on {
				return nil // alice would delete what bob's later cases read
			}
			r, err := kadm.NewClient(cl).DeleteTopic(ctx, map[bool]string{true: "a-new-alice", false: "a-new-bob"}[on])
			return firstErr(err, r.Err)
		}, kerr.TopicAuthorizationFailed, nil},
	}
	alice, bob := itest.AclClient(t, c, "alice"), itest.AclClient(t, c, "bob", kgo.DisableIdempotentWrite())
	aliceCl := itest.AclClient(t, c, "alice", kgo.DisableIdempotentWrite())
	_ = alice
	for _, tc := range cases {
		if on {
			if err := tc.do(ctx, aliceCl, "alice"); err != nil && (!notDenied[tc.name] || errors.Is(err, tc.want)) {
				t.Errorf("%s as alice: %v", tc.name, err)
			}
		}
		var before string
		if tc.state != nil {
			before = tc.state(ctx)
		}
		err := tc.do(ctx, bob, "bob")
		switch {
		case on && !errors.Is(err, tc.want):
			t.Errorf("%s as bob: %v, want %v", tc.name, err, tc.want)
		case !on && err != nil && (!notDenied[tc.name] || errors.Is(err, tc.want)):
			t.Errorf("authorizer off: %s as bob: %v, want success", tc.name, err)
		}
		if tc.state != nil && on {
			if after := tc.state(ctx); after != before {
				t.Errorf("%s as bob changed state: %s → %s", tc.name, before, after)
			}
		}
	}
}

// errCode is the top-level error code of a response with one.
func errCode(resp interface{ GetVersion() int16 }, err error) error {
	if err != nil {
		return err
	}
	switch r := resp.(type) {
	case *kmsg.InitProducerIDResponse:
		return kerr.ErrorForCode(r.ErrorCode)
	case *kmsg.FindCoordinatorResponse:
		if len(r.Coordinators) > 0 {
			return kerr.ErrorForCode(r.Coordinators[0].ErrorCode)
		}
		return kerr.ErrorForCode(r.ErrorCode)
	}
	return nil
}

// TestAutoCreateNeedsCreate: alice (ALL on w-*) auto-creates a topic by
// producing to it; bob, with WRITE but not CREATE on w-*, does not (Kafka's
// rule for auto-creation on Metadata; minibroker also applies it on
// Produce). Negative control: with the authorizer off bob creates it.
func TestAutoCreateNeedsCreate(t *testing.T) {
	for _, on := range []bool{true, false} {
		c := itest.AclBroker(t, on)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		admin := kadm.NewClient(itest.AclClient(t, c, "admin"))
		if on {
			res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("w-").
				ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAll))
			itest.MustACLs(t, err, res)
			res, err = admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts("*").Topics("w-").
				ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite))
			itest.MustACLs(t, err, res)
		}
		for _, user := range []string{"alice", "bob"} {
			cl := itest.AclClient(t, c, user, kgo.AllowAutoTopicCreation(), kgo.DisableIdempotentWrite())
			err := itest.ProduceWithin(cl, "w-"+user, 3*time.Second)
			// A fresh client: kgo serves a recent Metadata from its cache.
			topics, lerr := kadm.NewClient(itest.AclClient(t, c, "admin")).ListTopics(ctx)
			if lerr != nil {
				t.Fatal(lerr)
			}
			created := topics.Has("w-" + user)
			if want := !on || user == "alice"; created != want || (err == nil) != want {
				t.Errorf("authorizer on=%v, %s: produce err %v, created %v (topics %v); want created %v", on, user, err, created, topics.Names(), want)
			}
		}
		cancel()
	}
}

// TestProduceFetchNeedWriteRead: bob may DESCRIBE topic p-t, so his
// client gets past Metadata and the Produce and Fetch handlers' own rules
// answer: TOPIC_AUTHORIZATION_FAILED, the log unchanged; alice (WRITE,
// READ) produces and reads.
func TestProduceFetchNeedWriteRead(t *testing.T) {
	c := itest.AclBroker(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := kadm.NewClient(itest.AclClient(t, c, "admin"))
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, "p-t"); err != nil {
		t.Fatal(err)
	}
	res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts("*").Topics("p-t").
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe))
	itest.MustACLs(t, err, res)
	res, err = admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("p-t").
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite, kadm.OpRead))
	itest.MustACLs(t, err, res)
	end := func() int64 {
		o, err := admin.ListEndOffsets(ctx, "p-t")
		if err != nil {
			t.Fatal(err)
		}
		l, _ := o.Lookup("p-t", 0)
		return l.Offset
	}
	if err := itest.ProduceWithin(itest.AclClient(t, c, "alice", kgo.DisableIdempotentWrite()), "p-t", 5*time.Second); err != nil {
		t.Fatalf("alice: %v", err)
	}
	before := end()
	err = itest.ProduceWithin(itest.AclClient(t, c, "bob", kgo.DisableIdempotentWrite()), "p-t", 5*time.Second)
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if after := end(); after != before {
		t.Fatalf("bob's denied produce moved the end offset %d → %d", before, after)
	}
	md, err := admin.ListTopics(ctx, "p-t")
	if err != nil {
		t.Fatal(err)
	}
	id := [16]byte(md["p-t"].ID)
	if code, n := itest.FetchCode(t, itest.AclClient(t, c, "alice"), "p-t", id); code != 0 || n == 0 {
		t.Fatalf("alice fetch: code %d, %d bytes", code, n)
	}
	if code, n := itest.FetchCode(t, itest.AclClient(t, c, "bob"), "p-t", id); code != kerr.TopicAuthorizationFailed.Code || n != 0 {
		t.Fatalf("bob fetch: code %d, %d bytes; want TOPIC_AUTHORIZATION_FAILED", code, n)
	}
}
