package broker

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/acl"
)

func opBits(ops ...kmsg.ACLOperation) int32 {
	var b int32
	for _, op := range ops {
		b |= 1 << op
	}
	return b
}

// metadataOps sends Metadata v10 (the last with the cluster's
// operations) for topics, allowing auto-creation, and formats each
// topic's code and operations and the cluster's: "t:0/264 … cluster 0".
func metadataOps(e *authzEnv, user string, include bool, topics ...string) string {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	req.IncludeTopicAuthorizedOperations, req.IncludeClusterAuthorizedOperations = include, include
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp := e.send(user, req, 3, 10).(*kmsg.MetadataResponse)
	var s []string
	for _, t := range resp.Topics {
		s = append(s, fmt.Sprintf("%s:%d/%d", *t.Topic, t.ErrorCode, t.AuthorizedOperations))
	}
	return fmt.Sprintf("%s cluster %d", strings.Join(s, " "), resp.AuthorizedOperations)
}

func describeClusterOps(e *authzEnv, user string) int32 {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	return e.send(user, req).(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations
}

func describeGroupOps(e *authzEnv, user string, v int16, group string) string {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups, req.IncludeAuthorizedOperations = []string{group}, true
	g := e.send(user, req, 15, v).(*kmsg.DescribeGroupsResponse).Groups[0]
	return fmt.Sprintf("%d/%d", g.ErrorCode, g.AuthorizedOperations)
}

// TestAuthorizedOperations: KIP-430's authorized_operations as Kafka
// computes them. alice may READ topic t (which implies DESCRIBE) and the
// groups g-*, and has IDEMPOTENT_WRITE on the cluster:
//   - Metadata v10 gives t READ|DESCRIBE; a topic she may not DESCRIBE is
//     TOPIC_AUTHORIZATION_FAILED with the "omitted" value; the cluster's
//     operations are 0 until she may DESCRIBE the cluster (Kafka reports
//     none without it), then DESCRIBE|IDEMPOTENT_WRITE; so in
//     DescribeCluster; not asked for, every field is the "omitted" value;
//   - a topic she may DESCRIBE but not CREATE is not auto-created:
//     TOPIC_AUTHORIZATION_FAILED (it was UNKNOWN_TOPIC_OR_PARTITION);
//     with CREATE it is created (answered UNKNOWN_TOPIC_OR_PARTITION, as
//     KRaft Kafka answers an auto-created topic) and reports its operations;
//   - DescribeGroups reports READ|DESCRIBE for g-a; bob, denied, gets
//     GROUP_AUTHORIZATION_FAILED with the "omitted" value (he got his
//     computed bits before), as does a missing group under v6.
//
// Negative control: with the authorizer off every field holds every
// operation of its resource type, as in Kafka without an authorizer.
func TestAuthorizedOperations(t *testing.T) {
	const omitted = math.MinInt32
	read, desc := kmsg.ACLOperationRead, kmsg.ACLOperationDescribe
	t.Run("authorizer-on", func(t *testing.T) {
		e := startAuthz(t, true)
		e.createTopic("t", 0)
		e.createTopic("hidden", 0)
		e.commitOffset("g-a", "t", 1)
		e.setACLs("alice", topicACL("t", read), groupsACL("g-", read), clusterACL(kmsg.ACLOperationIdempotentWrite),
			grant{kmsg.ACLResourceTypeTopic, "new-", true, []kmsg.ACLOperation{desc}})
		tOps := opBits(read, desc)
		want := fmt.Sprintf("t:0/%d hidden:29/%d new-1:29/%d cluster 0", tOps, omitted, omitted)
		if got := metadataOps(e, "alice", true, "t", "hidden", "new-1"); got != want {
			t.Errorf("Metadata: %s, want %s", got, want)
		}
		if _, ok := e.b.Topic("new-1"); ok {
			t.Errorf("new-1 was auto-created without CREATE")
		}
		if got := describeClusterOps(e, "alice"); got != 0 {
			t.Errorf("DescribeCluster without DESCRIBE on the cluster: %d, want 0", got)
		}
		e.setACLs("alice", topicACL("t", read), groupsACL("g-", read), clusterACL(kmsg.ACLOperationIdempotentWrite, desc),
			grant{kmsg.ACLResourceTypeTopic, "new-", true, []kmsg.ACLOperation{desc, kmsg.ACLOperationCreate}})
		clusterOps := opBits(desc, kmsg.ACLOperationIdempotentWrite)
		want = fmt.Sprintf("t:0/%d new-2:3/%d cluster %d", tOps, opBits(desc, kmsg.ACLOperationCreate), clusterOps)
		if got := metadataOps(e, "alice", true, "t", "new-2"); got != want {
			t.Errorf("Metadata with DESCRIBE on the cluster and CREATE on new-*: %s, want %s", got, want)
		}
		if got := describeClusterOps(e, "alice"); got != clusterOps {
			t.Errorf("DescribeCluster: %d, want %d", got, clusterOps)
		}
		want = fmt.Sprintf("t:0/%d cluster %d", omitted, omitted)
		if got := metadataOps(e, "alice", false, "t"); got != want {
			t.Errorf("Metadata not asking for operations: %s, want %s", got, want)
		}
		if got, want := describeGroupOps(e, "alice", 5, "g-a"), fmt.Sprintf("0/%d", opBits(read, desc)); got != want {
			t.Errorf("DescribeGroups g-a as alice: %s, want %s", got, want)
		}
		if got, want := describeGroupOps(e, "bob", 5, "g-a"), fmt.Sprintf("30/%d", omitted); got != want {
			t.Errorf("DescribeGroups g-a as bob: %s, want %s", got, want)
		}
		if got, want := describeGroupOps(e, "alice", 6, "g-missing"), fmt.Sprintf("69/%d", omitted); got != want {
			t.Errorf("DescribeGroups v6 of a missing group: %s, want %s (GROUP_ID_NOT_FOUND)", got, want)
		}
	})
	t.Run("authorizer-off", func(t *testing.T) {
		e := startAuthz(t, false)
		e.createTopic("t", 0)
		e.commitOffset("g-a", "t", 1)
		want := fmt.Sprintf("t:0/%d cluster %d", opBits(acl.TopicOperations...), opBits(acl.ClusterOperations...))
		if got := metadataOps(e, "bob", true, "t"); got != want {
			t.Errorf("Metadata: %s, want %s", got, want)
		}
		if got, want := describeClusterOps(e, "bob"), opBits(acl.ClusterOperations...); got != want {
			t.Errorf("DescribeCluster: %d, want %d", got, want)
		}
		if got, want := describeGroupOps(e, "bob", 5, "g-a"), fmt.Sprintf("0/%d", opBits(acl.GroupOperations...)); got != want {
			t.Errorf("DescribeGroups: %s, want %s", got, want)
		}
	})
}
