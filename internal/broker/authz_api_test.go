package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authzAPICase is one API's rule, sent as a raw request (kmsg through
// kgo's Broker.Request: no Metadata or coordinator lookup of the client's
// own answers for the broker) by alice, who has the ACLs it needs, and by
// bob, who has the same minus the one the rule is about.
type authzAPICase struct {
	name string
	key  int16 // the API, whose authzTable rule the negative control switches off
	alice,
	bob []grant
	// prep prepares user's resources as admin (a producer id, a
	// committed offset), if set; send sends the request as user.
	prep func(e *authzEnv, user string)
	send func(e *authzEnv, user string) kmsg.Response
	// allowed and denied are codesOf the answer to user when authorized
	// and when not (Kafka's codes and fields).
	allowed, denied func(user string) string
	// state reads what bob's denied request must not change ("" none).
	state func(e *authzEnv) string
}

const (
	cTopic   = 29 // TOPIC_AUTHORIZATION_FAILED
	cGroup   = 30 // GROUP_AUTHORIZATION_FAILED
	cCluster = 31 // CLUSTER_AUTHORIZATION_FAILED
	cTxnID   = 53 // TRANSACTIONAL_ID_AUTHORIZATION_FAILED
	cNotTry  = 55 // OPERATION_NOT_ATTEMPTED
	cInvalid = 42 // INVALID_REQUEST
)

func same(s string) func(string) string { return func(string) string { return s } }

// TestAuthorizationPerAPIRules: each case's request as alice succeeds; as
// bob it gets Kafka's answer and changes nothing; as bob again with the
// case's authzTable rule switched off (skipAuthzRule) the denial is gone
// and bob's answer is alice's: the rule, not something else, refused it.
func TestAuthorizationPerAPIRules(t *testing.T) {
	e := startAuthz(t, true)
	e.createTopic("t", 3)
	e.createTopic("u", 1)
	e.createTopic("d-alice", 3)
	e.createTopic("d-bob", 3)
	e.createTopic("e", 3)
	e.createTopic("cfg", 0)
	e.createTopic("p", 0)
	for _, tc := range append(txnAuthzCases(), adminAuthzCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			e.setACLs("alice", tc.alice...)
			e.setACLs("bob", tc.bob...)
			prep := func(user string) {
				if tc.prep != nil {
					tc.prep(e, user)
				}
			}
			prep("alice")
			if got, want := codesOf(tc.send(e, "alice")), tc.allowed("alice"); got != want {
				t.Errorf("alice: %s, want %s", got, want)
			}
			prep("bob")
			var before string
			if tc.state != nil {
				before = tc.state(e)
			}
			if got, want := codesOf(tc.send(e, "bob")), tc.denied("bob"); got != want {
				t.Errorf("bob: %s, want %s", got, want)
			}
			if tc.state != nil {
				if after := tc.state(e); after != before {
					t.Errorf("bob's denied request changed %s to %s", before, after)
				}
			}
			e.skip.Store(int32(tc.key))
			defer e.skip.Store(-1)
			prep("bob")
			if got, want := codesOf(tc.send(e, "bob")), tc.allowed("bob"); got != want {
				t.Errorf("rule of API %d switched off: bob: %s, want %s (the denial gone)", tc.key, got, want)
			}
		})
	}
}

func txnAuthzCases() []authzAPICase {
	w, r, d := kmsg.ACLOperationWrite, kmsg.ACLOperationRead, kmsg.ACLOperationDescribe
	type producer struct {
		id    int64
		epoch int16
	}
	producers := map[string]producer{}
	initTxn := func(prefix string) func(*authzEnv, string) {
		return func(e *authzEnv, user string) {
			pid, epoch := e.initProducer(prefix + user)
			producers[prefix+user] = producer{pid, epoch}
		}
	}
	addPartitions := func(e *authzEnv, prefix, user string, topics ...string) kmsg.Response {
		id := prefix + user
		pid, epoch := producers[id].id, producers[id].epoch
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
		for _, tp := range topics {
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = tp, []int32{0}
			req.Topics = append(req.Topics, rt)
		}
		return e.send(user, req, 24, 3) // the client form
	}
	txnPartitions := func(id string) func(e *authzEnv) string {
		return func(e *authzEnv) string {
			return codesOf(e.send("admin", &kmsg.DescribeTransactionsRequest{TransactionalIDs: []string{id}}))
		}
	}
	addOffsets := func(e *authzEnv, user string) kmsg.Response {
		id := "tx-ao-" + user
		pid, epoch := producers[id].id, producers[id].epoch
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, "g-ao-"+user
		return e.send(user, req)
	}
	txnCommitPrep := func(e *authzEnv, user string) {
		id, group := "tx-toc-"+user, "g-toc-"+user
		initTxn("tx-toc-")(e, user)
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = id, producers[id].id, producers[id].epoch, group
		if c := e.send("admin", ao).(*kmsg.AddOffsetsToTxnResponse).ErrorCode; c != 0 {
			e.t.Fatalf("AddOffsetsToTxn: %v", kerr.ErrorForCode(c))
		}
	}
	txnCommit := func(e *authzEnv, user string) kmsg.Response {
		id, group := "tx-toc-"+user, "g-toc-"+user
		pid, epoch := producers[id].id, producers[id].epoch
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, group, pid, epoch, -1
		for _, tp := range []string{"t", "u"} {
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = tp
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Offset = 2
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		return e.send(user, req, 24, 3) // the client form
	}
	staged := func(e *authzEnv) string { return e.committed("g-toc-bob", "t") }
	markers := func(e *authzEnv, user string) kmsg.Response {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.Committed = 4242, false
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "u", []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		return e.send(user, req)
	}
	logEnd := func(e *authzEnv) string { return fmt.Sprint(logEndOf(e.t, e.b, "u")) }
	produceTxn := func(e *authzEnv, user string) kmsg.Response {
		id := "tx-pr-" + user
		return e.send(user, produceReq("p", id, oneRecordBatch(producers[id].id, producers[id].epoch, true)))
	}
	produceTxnPrep := func(e *authzEnv, user string) {
		initTxn("tx-pr-")(e, user)
		id := "tx-pr-" + user
		add := kmsg.NewPtrAddPartitionsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, producers[id].id, producers[id].epoch
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = "p", []int32{0}
		add.Topics = append(add.Topics, rt)
		if got := codesOf(e.send("admin", add, 24, 3)); got != "p:0" {
			e.t.Fatalf("AddPartitionsToTxn: %s", got)
		}
	}
	pEnd := func(e *authzEnv) string { return fmt.Sprint(logEndOf(e.t, e.b, "p")) }
	return []authzAPICase{
		{name: "Produce of transactional records needs WRITE on the transactional id", key: 0,
			alice: []grant{txnACL("tx-", w), topicACL("p", w)}, bob: []grant{topicACL("p", w)},
			prep: produceTxnPrep, send: produceTxn,
			allowed: same("p:0"), denied: same(fmt.Sprintf("p:%d", cTxnID)), state: pEnd},
		{name: "Produce: a transactional id without transactional records needs no ACL on it, WRITE on the topic", key: 0,
			alice: []grant{topicACL("p", w)}, bob: []grant{topicACL("p", d)},
			send: func(e *authzEnv, user string) kmsg.Response {
				return e.send(user, produceReq("p", "tx-none", oneRecordBatch(-1, -1, false)))
			},
			allowed: same("p:0"), denied: same(fmt.Sprintf("p:%d", cTopic)), state: pEnd},
		{name: "AddPartitionsToTxn needs WRITE on the transactional id", key: 24,
			alice: []grant{txnACL("tx-", w), topicACL("t", w)}, bob: []grant{topicACL("t", w)},
			prep: initTxn("tx-add1-"), send: func(e *authzEnv, user string) kmsg.Response { return addPartitions(e, "tx-add1-", user, "t") },
			allowed: same("t:0"), denied: same(fmt.Sprintf("t:%d", cTxnID)), state: txnPartitions("tx-add1-bob")},
		{name: "AddPartitionsToTxn needs WRITE on every topic, all or nothing", key: 24,
			alice: []grant{txnACL("tx-", w), topicACL("t", w), topicACL("u", w)}, bob: []grant{txnACL("tx-", w), topicACL("u", w)},
			prep: initTxn("tx-add2-"), send: func(e *authzEnv, user string) kmsg.Response { return addPartitions(e, "tx-add2-", user, "t", "u") },
			allowed: same("t:0 u:0"), denied: same(fmt.Sprintf("t:%d u:%d", cTopic, cNotTry)), state: txnPartitions("tx-add2-bob")},
		{name: "AddOffsetsToTxn needs WRITE on the transactional id", key: 25,
			alice: []grant{txnACL("tx-", w), groupsACL("g-", r)}, bob: []grant{groupsACL("g-", r)},
			prep: initTxn("tx-ao-"), send: addOffsets, allowed: same("txn:0"), denied: same(fmt.Sprintf("txn:%d", cTxnID))},
		{name: "AddOffsetsToTxn needs READ on the group", key: 25,
			alice: []grant{txnACL("tx-", w), groupsACL("g-", r)}, bob: []grant{txnACL("tx-", w)},
			prep: initTxn("tx-ao-"), send: addOffsets, allowed: same("txn:0"), denied: same(fmt.Sprintf("txn:%d", cGroup))},
		{name: "TxnOffsetCommit needs WRITE on the transactional id", key: 28,
			alice: []grant{txnACL("tx-", w), groupsACL("g-", r), topicACL("t", r), topicACL("u", r)},
			bob:   []grant{groupsACL("g-", r), topicACL("t", r), topicACL("u", r)},
			prep:  txnCommitPrep, send: txnCommit, allowed: same("t:0 u:0"), denied: same(fmt.Sprintf("t:%d u:%d", cTxnID, cTxnID)), state: staged},
		{name: "TxnOffsetCommit needs READ on the group", key: 28,
			alice: []grant{txnACL("tx-", w), groupsACL("g-", r), topicACL("t", r), topicACL("u", r)},
			bob:   []grant{txnACL("tx-", w), topicACL("t", r), topicACL("u", r)},
			prep:  txnCommitPrep, send: txnCommit, allowed: same("t:0 u:0"), denied: same(fmt.Sprintf("t:%d u:%d", cGroup, cGroup)), state: staged},
		{name: "TxnOffsetCommit needs READ on each topic", key: 28,
			alice: []grant{txnACL("tx-", w), groupsACL("g-", r), topicACL("t", r), topicACL("u", r)},
			bob:   []grant{txnACL("tx-", w), groupsACL("g-", r), topicACL("u", r)},
			prep:  txnCommitPrep, send: txnCommit, allowed: same("t:0 u:0"), denied: same(fmt.Sprintf("u:0 t:%d", cTopic)), state: staged},
		{name: "WriteTxnMarkers needs CLUSTER_ACTION on the cluster", key: 27,
			alice: []grant{clusterACL(kmsg.ACLOperationClusterAction)},
			send:  markers, allowed: same("u:0"), denied: same(fmt.Sprintf("u:%d", cCluster)), state: logEnd},
		{name: "WriteTxnMarkers: or ALTER on the cluster", key: 27,
			alice: []grant{clusterACL(kmsg.ACLOperationAlter)}, bob: []grant{clusterACL(kmsg.ACLOperationDescribe)},
			send: markers, allowed: same("u:0"), denied: same(fmt.Sprintf("u:%d", cCluster)), state: logEnd},
		{name: "ListTransactions lists only the ids the principal may DESCRIBE", key: 66,
			alice: []grant{txnACL("tx-", d)},
			send: func(e *authzEnv, user string) kmsg.Response {
				pid, _ := e.initProducer("tx-list-" + user)
				req := kmsg.NewPtrListTransactionsRequest()
				req.ProducerIDFilters = []int64{pid}
				return e.send(user, req)
			},
			allowed: func(user string) string { return "list:0 tx-list-" + user + ":0" }, denied: same("list:0")},
		{name: "DescribeTransactions leaves out the topics the principal may not DESCRIBE", key: 65,
			alice: []grant{txnACL("tx-", d), topicACL("t", d)}, bob: []grant{txnACL("tx-", d)},
			send: func(e *authzEnv, user string) kmsg.Response {
				id := "tx-dt-" + user
				pid, epoch := e.initProducer(id)
				add := kmsg.NewPtrAddPartitionsToTxnRequest()
				add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid, epoch
				rt := kmsg.NewAddPartitionsToTxnRequestTopic()
				rt.Topic, rt.Partitions = "t", []int32{0}
				add.Topics = append(add.Topics, rt)
				if got := codesOf(e.send("admin", add, 24, 3)); got != "t:0" {
					e.t.Fatalf("AddPartitionsToTxn: %s", got)
				}
				return e.send(user, &kmsg.DescribeTransactionsRequest{TransactionalIDs: []string{id}})
			},
			allowed: func(user string) string { return "tx-dt-" + user + ":0   t:0" },
			denied:  func(user string) string { return "tx-dt-" + user + ":0" }},
	}
}
