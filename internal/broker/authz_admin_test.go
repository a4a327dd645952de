package broker

import (
	"bytes"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminAuthzCases: the cluster, config, offset and log APIs of
// TestAuthorizationPerAPIRules.
func adminAuthzCases() []authzAPICase {
	r, d := kmsg.ACLOperationRead, kmsg.ACLOperationDescribe
	logDirs := func(e *authzEnv, user string) kmsg.Response {
		return e.send(user, kmsg.NewPtrDescribeLogDirsRequest()) // all partitions
	}
	scramUpsert := func(user string) *kmsg.AlterUserSCRAMCredentialsRequest {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations = user, 2, 4096
		u.Salt, u.SaltedPassword = bytes.Repeat([]byte{1}, 16), bytes.Repeat([]byte{2}, 64)
		req.Upsertions = append(req.Upsertions, u)
		return req
	}
	describeSCRAM := func(e *authzEnv, user, of string) kmsg.Response {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		n := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		n.Name = of
		req.Users = append(req.Users, n)
		return e.send(user, req)
	}
	offsetDelete := func(e *authzEnv, user string) kmsg.Response {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = "g-od-" + user
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = "t"
		rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		return e.send(user, req)
	}
	epochEnd := func(replica int32) func(*authzEnv, string) kmsg.Response {
		return func(e *authzEnv, user string) kmsg.Response {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = replica
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = "e"
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return e.send(user, req)
		}
	}
	epochOK, epochDenied := same("e(epoch 0 end 3):0"), same(fmt.Sprintf("e(epoch -1 end -1):%d", cTopic))
	alterTopic := func(incremental bool) func(*authzEnv, string) kmsg.Response {
		return func(e *authzEnv, user string) kmsg.Response {
			v := map[string]string{"alice": "3600001", "bob": "3600002"}[user]
			return e.send(user, alterConfigsReq(incremental, kmsg.ConfigResourceTypeTopic, "cfg", "retention.ms", v))
		}
	}
	alterBroker := func(incremental bool) func(*authzEnv, string) kmsg.Response {
		return func(e *authzEnv, user string) kmsg.Response {
			return e.send(user, alterConfigsReq(incremental, kmsg.ConfigResourceTypeBroker, fmt.Sprint(e.b.nodeID), "log.retention.ms", "1"))
		}
	}
	retention := func(e *authzEnv) string {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "cfg"
		req.Resources = append(req.Resources, rr)
		for _, c := range e.send("admin", req).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
			if c.Name == "retention.ms" && c.Value != nil {
				return *c.Value
			}
		}
		return ""
	}
	listOffsets := func(topic string, ts int64) func(*authzEnv, string) kmsg.Response {
		return func(e *authzEnv, user string) kmsg.Response {
			req := kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID = -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = ts
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return e.send(user, req)
		}
	}
	createTopic := func(prefix string, validateOnly bool) func(*authzEnv, string) kmsg.Response {
		return func(e *authzEnv, user string) kmsg.Response {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.TimeoutMillis, req.ValidateOnly = 5000, validateOnly
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = prefix+user, 1, -1
			req.Topics = append(req.Topics, rt)
			return e.send(user, req)
		}
	}
	created := func(name string) func(*authzEnv) string {
		return func(e *authzEnv) string { _, ok := e.b.Topic(name); return fmt.Sprint(ok) }
	}
	create, describeConfigs := kmsg.ACLOperationCreate, kmsg.ACLOperationDescribeConfigs
	return []authzAPICase{
		{name: "CreateTopics needs CREATE on the topic (or the cluster)", key: 19,
			alice:   []grant{{kmsg.ACLResourceTypeTopic, "ct1-", true, []kmsg.ACLOperation{create, describeConfigs}}},
			bob:     []grant{{kmsg.ACLResourceTypeTopic, "ct1-", true, []kmsg.ACLOperation{describeConfigs}}},
			send:    createTopic("ct1-", false),
			allowed: func(user string) string { return fmt.Sprintf("ct1-%s(configs true code 0):0", user) },
			denied:  func(user string) string { return fmt.Sprintf("ct1-%s(configs false code 0):%d", user, cTopic) },
			state:   created("ct1-bob")},
		{name: "CreateTopics shows a topic's configs only with DESCRIBE_CONFIGS on it", key: 19,
			alice:   []grant{{kmsg.ACLResourceTypeTopic, "ct2-", true, []kmsg.ACLOperation{create, describeConfigs}}},
			bob:     []grant{clusterACL(create)},
			send:    createTopic("ct2-", true), // validate_only: both of bob's may succeed
			allowed: func(user string) string { return fmt.Sprintf("ct2-%s(configs true code 0):0", user) },
			denied:  func(user string) string { return fmt.Sprintf("ct2-%s(configs false code %d):0", user, cTopic) }},
		{name: "DescribeLogDirs needs DESCRIBE on the cluster", key: 35,
			alice: []grant{clusterACL(d)}, send: logDirs,
			allowed: same("dirs(1):0"), denied: same(fmt.Sprintf("dirs(0):%d", cCluster))},
		{name: "DescribeUserScramCredentials needs DESCRIBE on the cluster", key: 50,
			alice: []grant{clusterACL(d)},
			prep: func(e *authzEnv, _ string) {
				if got := codesOf(e.send("admin", scramUpsert("scram-user"))); got != "scram-user:0" {
					e.t.Fatalf("create SCRAM user: %s", got)
				}
			},
			send:    func(e *authzEnv, user string) kmsg.Response { return describeSCRAM(e, user, "scram-user") },
			allowed: same("all:0 user(scram-user):0"),
			// Kafka's error answer names no user.
			denied: same(fmt.Sprintf("all:%d user():%d", cCluster, cCluster))},
		{name: "AlterUserScramCredentials needs ALTER on the cluster", key: 51,
			alice:   []grant{clusterACL(kmsg.ACLOperationAlter)},
			send:    func(e *authzEnv, user string) kmsg.Response { return e.send(user, scramUpsert("scram-"+user)) },
			allowed: func(user string) string { return "scram-" + user + ":0" },
			denied:  func(user string) string { return fmt.Sprintf("scram-%s:%d", user, cCluster) },
			state:   func(e *authzEnv) string { return codesOf(describeSCRAM(e, "admin", "scram-bob")) }},
		{name: "OffsetDelete needs DELETE on the group", key: 47,
			alice: []grant{groupsACL("g-", kmsg.ACLOperationDelete), topicACL("t", r)}, bob: []grant{topicACL("t", r)},
			prep: func(e *authzEnv, user string) { e.commitOffset("g-od-"+user, "t", 1) }, send: offsetDelete,
			allowed: same("group:0 t:0"), denied: same(fmt.Sprintf("group:%d", cGroup)),
			state: func(e *authzEnv) string { return e.committed("g-od-bob", "t") }},
		{name: "OffsetDelete needs READ on each topic", key: 47,
			alice: []grant{groupsACL("g-", kmsg.ACLOperationDelete), topicACL("t", r)}, bob: []grant{groupsACL("g-", kmsg.ACLOperationDelete)},
			prep: func(e *authzEnv, user string) { e.commitOffset("g-od-"+user, "t", 1) }, send: offsetDelete,
			allowed: same("group:0 t:0"), denied: same(fmt.Sprintf("group:0 t:%d", cTopic)),
			state: func(e *authzEnv) string { return e.committed("g-od-bob", "t") }},
		{name: "OffsetForLeaderEpoch from a consumer needs DESCRIBE on the topic", key: 23,
			alice: []grant{topicACL("e", d)}, send: epochEnd(-1), allowed: epochOK, denied: epochDenied},
		{name: "OffsetForLeaderEpoch: CLUSTER_ACTION on the cluster answers every topic", key: 23,
			alice: []grant{clusterACL(kmsg.ACLOperationClusterAction)}, send: epochEnd(0), allowed: epochOK, denied: epochDenied},
		{name: "OffsetForLeaderEpoch from a replica id: DESCRIBE on the topic is enough, as Kafka", key: 23,
			alice: []grant{topicACL("e", d)}, send: epochEnd(0), allowed: epochOK, denied: epochDenied},
		{name: "DescribeProducers needs READ on the topic", key: 61,
			alice: []grant{topicACL("t", r)}, bob: []grant{topicACL("t", d)},
			send: func(e *authzEnv, user string) kmsg.Response {
				req := kmsg.NewPtrDescribeProducersRequest()
				rt := kmsg.NewDescribeProducersRequestTopic()
				rt.Topic, rt.Partitions = "t", []int32{0}
				req.Topics = append(req.Topics, rt)
				return e.send(user, req)
			},
			allowed: same("t:0"), denied: same(fmt.Sprintf("t:%d", cTopic))},
		{name: "AlterConfigs needs ALTER_CONFIGS on the topic", key: 33,
			alice: []grant{topicACL("cfg", kmsg.ACLOperationAlterConfigs)}, bob: []grant{topicACL("cfg", kmsg.ACLOperationDescribeConfigs)},
			send: alterTopic(false), allowed: same("cfg:0"), denied: same(fmt.Sprintf("cfg:%d", cTopic)), state: retention},
		{name: "AlterConfigs on the broker needs ALTER_CONFIGS on the cluster", key: 33,
			alice: []grant{clusterACL(kmsg.ACLOperationAlterConfigs)}, bob: []grant{clusterACL(kmsg.ACLOperationAlter)},
			// Allowed, the broker refuses: its settings are static.
			send: alterBroker(false), allowed: same("0:0"), denied: same(fmt.Sprintf("0:%d", cCluster))},
		{name: "IncrementalAlterConfigs needs ALTER_CONFIGS on the topic", key: 44,
			alice: []grant{topicACL("cfg", kmsg.ACLOperationAlterConfigs)}, bob: []grant{topicACL("cfg", kmsg.ACLOperationAlter)},
			send: alterTopic(true), allowed: same("cfg:0"), denied: same(fmt.Sprintf("cfg:%d", cTopic)), state: retention},
		{name: "IncrementalAlterConfigs on the broker needs ALTER_CONFIGS on the cluster", key: 44,
			alice: []grant{clusterACL(kmsg.ACLOperationAlterConfigs)},
			send:  alterBroker(true), allowed: same("0:0"), denied: same(fmt.Sprintf("0:%d", cCluster))},
		{name: "ListOffsets needs DESCRIBE on the topic", key: 2,
			alice: []grant{topicACL("e", d)}, send: listOffsets("e", -1),
			allowed: same("e(ts -1 offset 3):0"), denied: same(fmt.Sprintf("e(ts -1 offset -1):%d", cTopic))},
		{name: "DeleteRecords needs DELETE on the topic", key: 21,
			alice: []grant{topicACL("d-alice", kmsg.ACLOperationDelete)}, bob: []grant{topicACL("d-bob", d, r)},
			send: func(e *authzEnv, user string) kmsg.Response {
				req := kmsg.NewPtrDeleteRecordsRequest()
				req.TimeoutMillis = 5000
				rt := kmsg.NewDeleteRecordsRequestTopic()
				rt.Topic = "d-" + user
				rp := kmsg.NewDeleteRecordsRequestTopicPartition()
				rp.Offset = 1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return e.send(user, req)
			},
			allowed: func(user string) string { return fmt.Sprintf("d-%s(low 1):0", user) },
			denied:  func(user string) string { return fmt.Sprintf("d-%s(low -1):%d", user, cTopic) },
			state:   func(e *authzEnv) string { return codesOf(listOffsets("d-bob", -2)(e, "admin")) }},
	}
}

// alterConfigsReq sets name=value on one resource, with AlterConfigs or
// IncrementalAlterConfigs (SET).
func alterConfigsReq(incremental bool, rt kmsg.ConfigResourceType, resource, name, value string) kmsg.Request {
	if incremental {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = rt, resource
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = name, &value, kmsg.IncrementalAlterConfigOpSet
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		return req
	}
	req := kmsg.NewPtrAlterConfigsRequest()
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = rt, resource
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, &value
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	return req
}
