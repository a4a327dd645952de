package admin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestInternalTopics: __consumer_offsets, __transaction_state,
// __share_group_state and __mirror_state exist from the broker's start with Kafka's
// partition counts and configs, Metadata flags them internal, kadm lists
// them only when asked for internal topics, Fetch reads them, and no
// client changes them: Produce and DeleteRecords answer
// INVALID_TOPIC_EXCEPTION with Kafka's messages, DeleteTopics
// INVALID_TOPIC_EXCEPTION, CreatePartitions INVALID_PARTITIONS,
// CreateTopics TOPIC_ALREADY_EXISTS.
func TestInternalTopics(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("plain", 1),
		minibrokertest.Set("offsets.topic.num.partitions", "50"), // Kafka's default (minibrokertest sets 1)
		minibrokertest.Set("transaction.state.log.num.partitions", "7"),
		minibrokertest.Set("share.coordinator.state.topic.num.partitions", "5"))
	cl := itest.NewClient(t, c.Addr())
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	want := map[string]int{"__consumer_offsets": 50, "__transaction_state": 7, "__mirror_state": 1, "__share_group_state": 5}
	all := kmsg.NewPtrMetadataRequest()
	resp, err := all.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mt := range resp.Topics {
		name := *mt.Topic
		n, internal := want[name]
		if mt.IsInternal != internal || mt.ErrorCode != 0 || (internal && len(mt.Partitions) != n) {
			t.Fatalf("metadata %s: internal %v code %d partitions %d", name, mt.IsInternal, mt.ErrorCode, len(mt.Partitions))
		}
		seen[name] = true
	}
	if !seen["__consumer_offsets"] || !seen["__transaction_state"] || !seen["__mirror_state"] || !seen["__share_group_state"] || !seen["plain"] {
		t.Fatalf("all-topics metadata lists %v", seen)
	}
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := listed.Names(); !slices.Equal(names, []string{"plain"}) {
		t.Fatalf("kadm ListTopics: %v, want [plain]", names)
	}
	listed, err = adm.ListTopicsWithInternal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := listed.Names(); len(names) != 5 {
		t.Fatalf("kadm ListTopicsWithInternal: %v", names)
	}
	for topic, conf := range map[string]map[string]string{
		"__consumer_offsets":  {"cleanup.policy": "compact", "segment.bytes": "104857600", "compression.type": "producer"},
		"__transaction_state": {"cleanup.policy": "compact", "segment.bytes": "104857600", "compression.type": "uncompressed"},
		"__mirror_state":      {"cleanup.policy": "compact", "segment.bytes": "104857600", "compression.type": "uncompressed"},
		"__share_group_state": {"cleanup.policy": "delete", "segment.bytes": "104857600", "compression.type": "producer",
			"retention.ms": "-1", "retention.bytes": "-1"},
	} {
		for k, v := range conf {
			if got := itest.KadmTopicConfig(t, c, topic, k); got != v {
				t.Fatalf("%s %s = %q, want %q", topic, k, got, v)
			}
		}
	}

	// Produce: Kafka's ReplicaManager answer, with its message (v8+).
	for _, topic := range []string{"__consumer_offsets", "__transaction_state", "__mirror_state", "__share_group_state"} {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte("v")}).FirstErr()
		if !errors.Is(err, kerr.InvalidTopicException) {
			t.Fatalf("kgo produce to %s: %v, want INVALID_TOPIC_EXCEPTION", topic, err)
		}
	}
	if code, msg := rawProduce(t, cl, "__consumer_offsets"); code != kerr.InvalidTopicException.Code || msg != "Cannot append to internal topic __consumer_offsets" {
		t.Fatalf("produce v9: code %d message %q", code, msg)
	}
	// Fetch reads them (empty here: nothing was written).
	co, _ := c.Broker().Topic("__consumer_offsets")
	if code, _ := itest.FetchCode(t, cl, "__consumer_offsets", co.ID); code != 0 {
		t.Fatalf("fetch __consumer_offsets: %v", kerr.ErrorForCode(code))
	}
	// DeleteRecords, DeleteTopics, CreatePartitions, CreateTopics.
	dr, err := adm.DeleteRecords(ctx, kadm.Offsets{"__consumer_offsets": {0: {At: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := dr.Lookup("__consumer_offsets", 0); !errors.Is(r.Err, kerr.InvalidTopicException) {
		t.Fatalf("DeleteRecords: %v", r.Err)
	}
	del, err := adm.DeleteTopics(ctx, "__consumer_offsets", "__transaction_state", "__mirror_state", "__share_group_state")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range del {
		if !errors.Is(r.Err, kerr.InvalidTopicException) {
			t.Fatalf("DeleteTopics %s: %v", r.Topic, r.Err)
		}
	}
	cp, err := adm.CreatePartitions(ctx, 1, "__transaction_state")
	if err != nil {
		t.Fatal(err)
	}
	if r := cp["__transaction_state"]; !errors.Is(r.Err, kerr.InvalidPartitions) {
		t.Fatalf("CreatePartitions: %v", r.Err)
	}
	ct, err := adm.CreateTopic(ctx, 3, 1, nil, "__consumer_offsets")
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("CreateTopic: %v %+v", err, ct)
	}
	for topic, n := range want {
		if got := (partitionsOf(c, topic)); got != n {
			t.Fatalf("%s has %d partitions after the refusals, want %d", topic, got, n)
		}
	}

	// An existing topic keeps its partition count across a restart with
	// another setting, as Kafka's coordinator takes the topic's count.
	c.Close()
	c2 := minibrokertest.Start(t, minibrokertest.DataDir(c.DataDir()), minibrokertest.Set("offsets.topic.num.partitions", "3"))
	if got := (partitionsOf(c2, "__consumer_offsets")); got != 50 {
		t.Fatalf("after a restart with offsets.topic.num.partitions=3: %d partitions", got)
	}
}

// TestInternalTopicsFetchACLs: reading __consumer_offsets takes READ on
// the topic, as in Kafka: bob, without it, is TOPIC_AUTHORIZATION_FAILED;
// alice, allowed READ and DESCRIBE on it, reads it.
func TestInternalTopicsFetchACLs(t *testing.T) {
	t.Parallel()
	c := itest.AclBroker(t, true)
	adm := kadm.NewClient(itest.AclClient(t, c, "admin"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").
		Topics("__consumer_offsets").Operations(kadm.OpRead, kadm.OpDescribe))
	itest.MustACLs(t, err, res)
	topic, ok := c.Broker().Topic("__consumer_offsets")
	if !ok {
		t.Fatal("no __consumer_offsets")
	}
	if code, _ := itest.FetchCode(t, itest.AclClient(t, c, "alice"), "__consumer_offsets", topic.ID); code != 0 {
		t.Fatalf("alice: %v", kerr.ErrorForCode(code))
	}
	if code, _ := itest.FetchCode(t, itest.AclClient(t, c, "bob"), "__consumer_offsets", topic.ID); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
}

// TestInternalTopicAdopted: a plain __consumer_offsets an older
// minibroker auto-created (e.g. on Burrow's Metadata) is kept with its
// partition count and given the compaction configs at the next start.
func TestInternalTopicAdopted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := minibrokertest.Start(t, append(itest.KafkaCoordinatorTopics(), minibrokertest.DataDir(dir))...)
	c.Close()
	// What an older minibroker left: the topic as a plain one, 1
	// partition, no configs (topics.json as it writes it).
	if err := os.WriteFile(filepath.Join(dir, "topics.json"), []byte(`{"version":1,"topics":[{"name":"__consumer_offsets","id":"0123456789abcdef0123456789abcdef","partitions":1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c2 := minibrokertest.Start(t, append(itest.KafkaCoordinatorTopics(), minibrokertest.DataDir(dir))...)
	if got := (partitionsOf(c2, "__consumer_offsets")); got != 1 {
		t.Fatalf("adopted topic: %d partitions, want 1", got)
	}
	if got := itest.KadmTopicConfig(t, c2, "__consumer_offsets", "cleanup.policy"); got != "compact" {
		t.Fatalf("adopted topic: cleanup.policy %q", got)
	}
	if got := (partitionsOf(c2, "__transaction_state")); got != 50 {
		t.Fatalf("__transaction_state: %d partitions", got)
	}
}

// rawProduce sends one Produce v9 of a one-record batch to partition 0
// of topic and returns the partition's code and message.
func rawProduce(t *testing.T, cl *kgo.Client, topic string) (int16, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw := itest.KeyedBatch([]byte("k"))
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	msg := ""
	if p.ErrorMessage != nil {
		msg = *p.ErrorMessage
	}
	return p.ErrorCode, msg
}

// partitionsOf is the partition count of topic on c's broker, -1 when
// there is no such topic.
func partitionsOf(c *minibrokertest.Cluster, topic string) int {
	t, ok := c.Broker().Topic(topic)
	if !ok {
		return -1
	}
	return len(t.Partitions)
}
