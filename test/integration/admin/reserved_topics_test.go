package admin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// metadataFor sends one Metadata v12 request allowing auto-creation.
func metadataFor(t *testing.T, cl *kgo.Client, names ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	for _, n := range names {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("metadata %v: %v", names, err)
	}
	return resp
}

// TestReservedTopicNames: the names Kafka reserves for its internal topics
// (and minibroker's __mirror_state) never become plain topics. A Metadata
// request with auto-creation on for the one the broker does not make
// (__cluster_metadata) is answered
// UNKNOWN_TOPIC_OR_PARTITION, is_internal as in Kafka, no partitions, as
// Kafka answers for an internal topic not yet made, and nothing is
// created, through kmsg, sarama and kcat; CreateTopics of each is
// INVALID_REQUEST with Kafka's message (kadm). __consumer_offsets,
// __transaction_state, __share_group_state and __mirror_state, which the
// broker creates at
// start-up (TestInternalTopics), are answered with their partitions,
// is_internal set, and CreateTopics of them TOPIC_ALREADY_EXISTS (kadm and
// sarama), as Kafka's controller answers once they exist.
//
// Seen failing before the fix: the first Metadata created a 1-partition
// topic __consumer_offsets (is_internal false) and the CreateTopics calls
// succeeded.
func TestReservedTopicNames(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, itest.KafkaCoordinatorTopics()...)
	cl := itest.NewClient(t, c.Addr())
	reserved := map[string]bool{"__consumer_offsets": true, "__transaction_state": true, "__share_group_state": true, "__cluster_metadata": false, "__mirror_state": true}
	made := map[string]int{"__consumer_offsets": 50, "__transaction_state": 50, "__mirror_state": 1, "__share_group_state": 50}
	for name, internal := range reserved {
		for range 2 { // asked again: still not there
			resp := metadataFor(t, cl, name)
			if len(resp.Topics) != 1 {
				t.Fatalf("metadata %s: %d topics", name, len(resp.Topics))
			}
			mt := resp.Topics[0]
			if n := made[name]; n > 0 {
				if mt.ErrorCode != 0 || !mt.IsInternal || len(mt.Partitions) != n {
					t.Fatalf("metadata %s: code %d internal %v partitions %d, want 0 true %d",
						name, mt.ErrorCode, mt.IsInternal, len(mt.Partitions), n)
				}
				continue
			}
			if mt.ErrorCode != kerr.UnknownTopicOrPartition.Code || mt.IsInternal != internal || len(mt.Partitions) != 0 {
				t.Fatalf("metadata %s: code %d internal %v partitions %d, want %d %v 0",
					name, mt.ErrorCode, mt.IsInternal, len(mt.Partitions), kerr.UnknownTopicOrPartition.Code, internal)
			}
		}
		if _, ok := c.Broker().Topic(name); ok != (made[name] > 0) {
			t.Fatalf("%s: topic exists %v after Metadata", name, ok)
		}
	}

	// sarama's client asks Metadata with auto-creation (its default) and
	// retries; the partitions never come.
	scfg := itest.SaramaConfig(sarama.V3_6_0_0)
	scfg.Metadata.Retry.Max = 1
	sc, err := sarama.NewClient([]string{c.Addr()}, scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if _, err := sc.Partitions("__cluster_metadata"); !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("sarama Partitions(__cluster_metadata): %v, want unknown topic", err)
	}
	if ps, err := sc.Partitions("__consumer_offsets"); err != nil || len(ps) != 50 {
		t.Fatalf("sarama Partitions(__consumer_offsets): %v %v, want 50", ps, err)
	}

	// kcat (librdkafka) lists it as unknown.
	text, _ := itest.RunKcat(t, "", "-L", "-b", c.Addr(), "-t", "__cluster_metadata")
	if !strings.Contains(text, "Unknown topic or partition") {
		t.Fatalf("kcat -L -t __cluster_metadata:\n%s", text)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := itest.KadmClient(t, c.Addr())
	for name := range reserved {
		res, err := adm.CreateTopic(ctx, 3, 1, nil, name)
		if made[name] > 0 {
			if !errors.Is(err, kerr.TopicAlreadyExists) {
				t.Fatalf("CreateTopic %s: %v, want TOPIC_ALREADY_EXISTS", name, err)
			}
			continue
		}
		want := "Creation of internal topic " + name + " is prohibited."
		if !errors.Is(err, kerr.InvalidRequest) || res.ErrMessage != want {
			t.Fatalf("CreateTopic %s: %v %q, want INVALID_REQUEST %q", name, err, res.ErrMessage, want)
		}
	}
	sadm, err := sarama.NewClusterAdminFromClient(sc)
	if err != nil {
		t.Fatal(err)
	}
	err = sadm.CreateTopic("__mirror_state", &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false)
	var terr *sarama.TopicError
	if !errors.As(err, &terr) || terr.Err != sarama.ErrTopicAlreadyExists {
		t.Fatalf("sarama CreateTopic(__mirror_state): %v, want TOPIC_ALREADY_EXISTS", err)
	}
	if names := c.Broker().TopicNames(); len(names) != 4 || made[names[0]] == 0 || made[names[1]] == 0 || made[names[2]] == 0 || made[names[3]] == 0 {
		t.Fatalf("topics after all this: %v, want the four internal ones", names)
	}
}

// TestAutoCreateAnswersAsKRaft: a Metadata request that auto-creates a
// topic answers it UNKNOWN_TOPIC_OR_PARTITION without partitions, as KRaft
// Kafka's AutoTopicCreationManager does; the topic exists at once, so the
// next Metadata has its partitions. kgo and sarama producers, which retry
// the first answer, still produce to new topics.
//
// The rule's failure, for whoever breaks it: a first answer that holds
// the topic and its partitions with code 0.
func TestAutoCreateAnswersAsKRaft(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Set("num.partitions", "2"))
	cl := itest.NewClient(t, c.Addr())
	first := metadataFor(t, cl, "fresh").Topics[0]
	if first.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(first.Partitions) != 0 || first.IsInternal {
		t.Fatalf("first metadata for fresh: code %d, %d partitions, internal %v; want %d, 0, false",
			first.ErrorCode, len(first.Partitions), first.IsInternal, kerr.UnknownTopicOrPartition.Code)
	}
	second := metadataFor(t, cl, "fresh").Topics[0]
	if second.ErrorCode != 0 || len(second.Partitions) != 2 {
		t.Fatalf("second metadata for fresh: code %d, %d partitions; want 0, 2", second.ErrorCode, len(second.Partitions))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prod := itest.NewClient(t, c.Addr(), kgo.AllowAutoTopicCreation())
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "by-kgo", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("kgo produce to a new topic: %v", err)
	}
	scfg := sarama.NewConfig()
	scfg.Producer.Return.Successes = true
	scfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	sp, err := sarama.NewSyncProducer([]string{c.Addr()}, scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if _, _, err := sp.SendMessage(&sarama.ProducerMessage{Topic: "by-sarama", Value: sarama.StringEncoder("y")}); err != nil {
		t.Fatalf("sarama produce to a new topic: %v", err)
	}
	for _, name := range []string{"by-kgo", "by-sarama"} {
		if _, ok := c.Broker().Topic(name); !ok {
			t.Fatalf("%s was not created", name)
		}
	}
}
