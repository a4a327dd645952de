package admin

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

func adminCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// kadm's ElectLeaders on one node: every partition of a topic is
// ELECTION_NOT_NEEDED (this node already leads it, preferred and clean),
// an unknown partition UNKNOWN_TOPIC_OR_PARTITION, and all partitions
// (a nil set) lists each topic with none needing an election, as Kafka's
// controller answers. Before ElectLeaders was served the request closed
// the connection and kadm returned an error.
func TestElectLeadersOneNode(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("el", 3), minibrokertest.Topic("el2", 1))
	adm := itest.KadmClient(t, c.Addr())
	for _, how := range []kadm.ElectLeadersHow{kadm.ElectPreferredReplica, kadm.ElectLiveReplica} {
		s := kadm.TopicsSet{}
		s.Add("el", 0, 1, 2, 7)
		s.Add("nope", 0)
		rs, err := adm.ElectLeaders(adminCtx(t), how, s)
		if err != nil {
			t.Fatalf("how %v: %v", how, err)
		}
		for p := int32(0); p < 3; p++ {
			if r := rs["el"][p]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
				t.Errorf("how %v el-%d: %v, want ELECTION_NOT_NEEDED", how, p, r.Err)
			}
		}
		if r := rs["el"][7]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("el-7: %v, want UNKNOWN_TOPIC_OR_PARTITION", r.Err)
		}
		if r := rs["nope"][0]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("nope-0: %v, want UNKNOWN_TOPIC_OR_PARTITION", r.Err)
		}
	}
	all, err := adm.ElectLeaders(adminCtx(t), kadm.ElectPreferredReplica, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Every topic, the internal ones too, with no partition needing one.
	if len(all) != 6 || len(all["el"]) != 0 || len(all["el2"]) != 0 || len(all["__consumer_offsets"]) != 0 || len(all["__transaction_state"]) != 0 || len(all["__mirror_state"]) != 0 || len(all["__share_group_state"]) != 0 {
		t.Fatalf("all partitions: %+v, want the six topics with no partition needing an election", all)
	}
}

// kadm's AlterPartitionAssignments and ListPartitionReassignments: the
// current assignment (this node) is accepted and changes nothing; a
// replica list naming another broker, this node twice, or nothing is
// INVALID_REPLICA_ASSIGNMENT; cancelling is NO_REASSIGNMENT_IN_PROGRESS;
// an unknown partition UNKNOWN_TOPIC_OR_PARTITION; nothing is ever listed
// as reassigning.
func TestPartitionReassignmentsKadm(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("ra", 2))
	adm := itest.KadmClient(t, c.Addr())
	node := c.Broker().NodeID()
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("ra", 0, []int32{node})
	req.Assign("ra", 1, []int32{node, node + 1})
	req.Assign("nope", 0, []int32{node})
	resps, err := adm.AlterPartitionAssignments(adminCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]error{
		"ra":   {0: nil, 1: kerr.InvalidReplicaAssignment},
		"nope": {0: kerr.UnknownTopicOrPartition},
	}
	for topic, ps := range want {
		for p, w := range ps {
			got := resps[topic][p].Err
			if (w == nil) != (got == nil) || (w != nil && !errors.Is(got, w)) {
				t.Errorf("%s-%d: %v, want %v", topic, p, got, w)
			}
		}
	}
	// Raw: the cases kadm's request builder cannot express.
	cl := itest.NewClient(t, c.Addr())
	for _, tc := range []struct {
		replicas []int32
		want     int16
	}{
		{nil, kerr.NoReassignmentInProgress.Code},
		{[]int32{}, kerr.InvalidReplicaAssignment.Code},
		{[]int32{node, node}, kerr.InvalidReplicaAssignment.Code},
	} {
		r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = "ra"
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = 0, tc.replicas
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		resp, err := r.RequestWith(adminCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Errorf("replicas %v: code %d, want %d", tc.replicas, got, tc.want)
		}
	}
	listed, err := adm.ListPartitionReassignments(adminCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 0 {
		t.Fatalf("reassignments listed: %+v", listed)
	}
	s := kadm.TopicsSet{}
	s.Add("ra", 0, 1)
	if listed, err = adm.ListPartitionReassignments(adminCtx(t), s); err != nil || len(listed) != 0 {
		t.Fatalf("named: %+v, %v", listed, err)
	}
	// Nothing moved: still this node only.
	md := itest.KadmMetadata(t, c.Addr(), "ra")
	if r := md.Topics["ra"].Partitions[1].Replicas; len(r) != 1 || r[0] != node {
		t.Fatalf("replicas after the refused reassignment: %v", r)
	}
}

// sarama's ClusterAdmin (as kafkactl's replica change uses it):
// AlterPartitionReassignments onto this node succeeds, onto another
// broker fails with INVALID_REPLICA_ASSIGNMENT, and
// ListPartitionReassignments lists nothing.
func TestPartitionReassignmentsSarama(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("sra", 2))
	node := c.Broker().NodeID()
	cfg := itest.SaramaConfig(sarama.V3_6_0_0)
	cfg.Admin.Retry.Max = 0
	adm, err := sarama.NewClusterAdmin([]string{c.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.AlterPartitionReassignments("sra", [][]int32{{node}, {node}}); err != nil {
		t.Fatalf("reassign onto this node: %v", err)
	}
	err = adm.AlterPartitionReassignments("sra", [][]int32{{node}, {node + 5}})
	if !errors.Is(err, sarama.ErrReassignPartitions) || !errors.Is(err, sarama.ErrInvalidReplicaAssignment) {
		t.Fatalf("reassign onto another broker: %v, want INVALID_REPLICA_ASSIGNMENT", err)
	}
	st, err := adm.ListPartitionReassignments("sra", []int32{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 0 {
		t.Fatalf("listed: %+v", st)
	}
}

// DescribeQuorum (kadm has no helper: kmsg through kadm's client): this
// node is the only voter and the leader of __cluster_metadata-0, at every
// version; v2 adds the node with its listener; any other partition is
// UNKNOWN_TOPIC_OR_PARTITION.
func TestDescribeQuorumOneNode(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t)
	cl := itest.NewClient(t, c.Addr())
	node := c.Broker().NodeID()
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrDescribeQuorumRequest()
		req.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata",
			Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
		resp, err := kgoRequestAt(t, cl, req, v)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		r := resp.(*kmsg.DescribeQuorumResponse)
		if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: %+v", v, r)
		}
		p := r.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.LeaderID != node || len(p.CurrentVoters) != 1 || p.CurrentVoters[0].ReplicaID != node || len(p.Observers) != 0 {
			t.Fatalf("v%d partition: %+v", v, p)
		}
		if v >= 1 && p.CurrentVoters[0].LastCaughtUpTimestamp <= 0 {
			t.Fatalf("v%d: leader's caught-up time %d", v, p.CurrentVoters[0].LastCaughtUpTimestamp)
		}
		if v == 2 && (len(r.Nodes) != 1 || r.Nodes[0].NodeID != node || len(r.Nodes[0].Listeners) == 0) {
			t.Fatalf("v2 nodes: %+v", r.Nodes)
		}
	}
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "other", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	resp, err := req.RequestWith(adminCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("other partition: code %d", got)
	}
}

// kgoRequestAt sends req at version v, to any broker: wrapped, kgo
// neither splits it by partition leader nor answers any part itself.
func kgoRequestAt(t *testing.T, cl *kgo.Client, req kmsg.Request, v int16) (kmsg.Response, error) {
	t.Helper()
	pinned := &pinnedVersion{Request: req, v: v}
	return cl.Request(adminCtx(t), pinned)
}

// pinnedVersion makes kgo send a request at exactly v (kgo uses the
// highest version both sides serve, at most MaxVersion).
type pinnedVersion struct {
	kmsg.Request
	v int16
}

func (p *pinnedVersion) MaxVersion() int16 { return p.v }

// AlterReplicaLogDirs: moving a partition to the data dir it is already
// in is NONE, another directory LOG_DIR_NOT_FOUND, a partition this node
// does not have REPLICA_NOT_AVAILABLE (Kafka's codes).
func TestAlterReplicaLogDirsOneDir(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("ald", 1))
	cl := itest.NewClient(t, c.Addr())
	dir, err := filepath.Abs(c.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	req.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{
		{Dir: dir, Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "ald", Partitions: []int32{0, 4}}}},
		{Dir: "/elsewhere", Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "ald", Partitions: []int32{0}}}},
	}
	// Pinned (a wrapped request): kgo would otherwise split the request
	// by partition leader and answer the unknown partition itself.
	kresp, err := kgoRequestAt(t, cl, req, 2)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.AlterReplicaLogDirsResponse)
	var got []string
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			got = append(got, tp.Topic+"/"+kerrName(p.ErrorCode))
		}
	}
	want := "ald/NONE ald/REPLICA_NOT_AVAILABLE ald/LOG_DIR_NOT_FOUND"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

func kerrName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return "?"
}
