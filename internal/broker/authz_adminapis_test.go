package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdminAPIsAuthorization: the admin APIs (docs/ONE_NODE_APIS.md) as Kafka's
// KafkaApis and ControllerApis check them. alice has the ACL each needs,
// bob the same minus it: bob gets Kafka's code; with the API's authzTable
// rule switched off (or, for the checks made in the handler, nothing to
// switch) bob's answer is alice's.
func TestAdminAPIsAuthorization(t *testing.T) {
	e := startAuthz(t, true)
	e.createTopic("aa", 1)
	e.createTopic("ab", 1)
	alter, describe, describeConfigs, alterConfigs := kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs
	node := e.b.nodeID
	elect := func() kmsg.Request {
		r := kmsg.NewPtrElectLeadersRequest()
		r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "aa", Partitions: []int32{0}}}
		return r
	}
	reassign := func() kmsg.Request {
		r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		r.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "aa",
			Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{node}}}}}
		return r
	}
	quorum := func() kmsg.Request {
		r := kmsg.NewPtrDescribeQuorumRequest()
		r.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata",
			Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
		return r
	}
	logDirs := func() kmsg.Request {
		r := kmsg.NewPtrAlterReplicaLogDirsRequest()
		r.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{{Dir: e.b.dataDir, Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "aa", Partitions: []int32{0}}}}}
		return r
	}
	groupConfig := func() kmsg.Request {
		r := kmsg.NewPtrDescribeConfigsRequest()
		r.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "gc-1"}}
		return r
	}
	alterGroupConfig := func() kmsg.Request {
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "gc-1",
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Op: kmsg.IncrementalAlterConfigOpSet,
				Name: "consumer.session.timeout.ms", Value: kmsg.StringPtr("50000")}}}}
		return r
	}
	alterClientMetrics := func() kmsg.Request {
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeClientMetrics, ResourceName: "cm",
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Op: kmsg.IncrementalAlterConfigOpSet,
				Name: "interval.ms", Value: kmsg.StringPtr("1000")}}}}
		return r
	}
	dtp := func() kmsg.Request {
		r := kmsg.NewPtrDescribeTopicPartitionsRequest()
		r.ResponsePartitionLimit = 100
		r.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "aa"}, {Topic: "ab"}}
		return r
	}
	for _, tc := range []struct {
		name         string
		key          int16
		alice, bob   []grant
		req          func() kmsg.Request
		allowed, bad string
		inHandler    bool // checked in the handler: no rule to switch off
	}{
		{"ElectLeaders", 43, []grant{clusterACL(alter)}, []grant{clusterACL(describe)}, elect,
			"top:0 aa-0:84", "top:31 aa-0:31", false},
		{"AlterPartitionReassignments", 45, []grant{clusterACL(alter)}, []grant{clusterACL(describe)}, reassign,
			"top:0 aa-0:0", "top:31 aa-0:31", false},
		{"ListPartitionReassignments", 46, []grant{clusterACL(describe)}, []grant{clusterACL(kmsg.ACLOperationClusterAction)},
			func() kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() }, "top:0", "top:31", false},
		{"DescribeQuorum", 55, []grant{clusterACL(describe)}, []grant{clusterACL(kmsg.ACLOperationClusterAction)}, quorum,
			"top:0 __cluster_metadata-0:0", "top:31 __cluster_metadata-0:31", false},
		{"AlterReplicaLogDirs", 34, []grant{clusterACL(alter)}, []grant{clusterACL(describe)}, logDirs,
			"aa-0:0", "aa-0:31", true},
		{"ListConfigResources", 74, []grant{clusterACL(describeConfigs)}, []grant{clusterACL(describe)},
			func() kmsg.Request { return kmsg.NewPtrListConfigResourcesRequest() }, "top:0", "top:31", false},
		{"DescribeConfigs GROUP", 32, []grant{groupsACL("gc-", describeConfigs)}, []grant{groupsACL("gc-", kmsg.ACLOperationRead)}, groupConfig,
			"gc-1:0", "gc-1:30", false},
		{"IncrementalAlterConfigs GROUP", 44, []grant{groupsACL("gc-", alterConfigs)}, []grant{groupsACL("gc-", describeConfigs)}, alterGroupConfig,
			"gc-1:0", "gc-1:30", false},
		{"IncrementalAlterConfigs CLIENT_METRICS", 44, []grant{clusterACL(alterConfigs)}, []grant{groupsACL("cm", alterConfigs)}, alterClientMetrics,
			"cm:0", "cm:31", false},
		{"DescribeTopicPartitions", 75, []grant{topicACL("aa", describe), topicACL("ab", describe)}, []grant{topicACL("aa", describe)}, dtp,
			"aa:0 ab:0", "aa:0 ab:29", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			e.setACLs("alice", tc.alice...)
			e.setACLs("bob", tc.bob...)
			if got := adminAPICodes(e.send("alice", tc.req())); got != tc.allowed {
				t.Errorf("alice: %s, want %s", got, tc.allowed)
			}
			if got := adminAPICodes(e.send("bob", tc.req())); got != tc.bad {
				t.Errorf("bob: %s, want %s", got, tc.bad)
			}
			if tc.inHandler {
				return
			}
			e.skip.Store(int32(tc.key))
			defer e.skip.Store(-1)
			if got := adminAPICodes(e.send("bob", tc.req())); got != tc.allowed {
				t.Errorf("rule of API %d switched off: bob: %s, want %s", tc.key, got, tc.allowed)
			}
		})
	}
}

// adminAPICodes lists a response's error codes: "top" for the top level,
// then topic-partition or resource entries.
func adminAPICodes(resp kmsg.Response) string {
	var s []string
	add := func(what string, code int16) { s = append(s, fmt.Sprintf("%s:%d", what, code)) }
	switch r := resp.(type) {
	case *kmsg.ElectLeadersResponse:
		add("top", r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(fmt.Sprintf("%s-%d", t.Topic, p.Partition), p.ErrorCode)
			}
		}
	case *kmsg.AlterPartitionAssignmentsResponse:
		add("top", r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(fmt.Sprintf("%s-%d", t.Topic, p.Partition), p.ErrorCode)
			}
		}
	case *kmsg.ListPartitionReassignmentsResponse:
		add("top", r.ErrorCode)
	case *kmsg.DescribeQuorumResponse:
		add("top", r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(fmt.Sprintf("%s-%d", t.Topic, p.Partition), p.ErrorCode)
			}
		}
	case *kmsg.AlterReplicaLogDirsResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(fmt.Sprintf("%s-%d", t.Topic, p.Partition), p.ErrorCode)
			}
		}
	case *kmsg.ListConfigResourcesResponse:
		add("top", r.ErrorCode)
	case *kmsg.DescribeConfigsResponse:
		for _, c := range r.Resources {
			add(c.ResourceName, c.ErrorCode)
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, c := range r.Resources {
			add(c.ResourceName, c.ErrorCode)
		}
	case *kmsg.DescribeTopicPartitionsResponse:
		for _, t := range r.Topics {
			add(*t.Topic, t.ErrorCode)
		}
	default:
		return fmt.Sprintf("%T", resp)
	}
	return strings.Join(s, " ")
}
