package broker

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/minibroker/minibroker/internal/config"
)

// startServing starts a broker on dir with the given settings and a kgo
// client for it; both end with the test.
func startServing(t *testing.T, dir string, logger *zap.Logger, sets ...string) (*Broker, *kgo.Client) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = dir, "127.0.0.1:0", ""
	for _, kv := range sets {
		if err := cfg.SetPair(kv); err != nil {
			t.Fatal(err)
		}
	}
	return serveWith(t, Options{Config: cfg, Logger: logger})
}

// serveWith starts a broker with opts and a kgo client for it; both end
// with the test.
func serveWith(t *testing.T, opts Options) (*Broker, *kgo.Client) {
	t.Helper()
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	b.Serve()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close(); b.Close(context.Background()) })
	return b, cl
}

func createTopics(t *testing.T, cl *kgo.Client, validateOnly bool, counts map[string]int32) map[string]kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 120000
	req.ValidateOnly = validateOnly
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, counts[n], 1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]kmsg.CreateTopicsResponseTopic{}
	for _, st := range resp.Topics {
		out[st.Topic] = st
	}
	return out
}

func addPartitions(t *testing.T, cl *kgo.Client, topic string, count int32) kmsg.CreatePartitionsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 120000
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0]
}

func countPartitionDirs(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		// The internal topics' partitions (internal_topics.go) are not counted.
		if topic, _, ok := parsePartitionDir(e.Name()); ok && e.IsDir() && !coordinatorTopic(topic) {
			n++
		}
	}
	return n
}

// Kafka's controller limit: a CreateTopics asking for more than 10,000
// partitions in all is refused whole with POLICY_VIOLATION and Kafka's
// message, nothing created; 10,000 is allowed (validate_only here). A
// CreatePartitions adding more than 10,000 is refused the same way.
// max.broker.partitions refuses what would pass it, and allows what
// does not.
func TestCreatePartitionCaps(t *testing.T) {
	dir := t.TempDir()
	_, cl := startServing(t, dir, nil, "max.broker.partitions=30")
	policy := kerr.PolicyViolation.Code

	got := createTopics(t, cl, false, map[string]int32{"huge": 100000})
	if st := got["huge"]; st.ErrorCode != policy || st.ErrorMessage == nil || *st.ErrorMessage != msgTooManyCreated {
		t.Fatalf("100,000 partitions: %v %v", kerr.ErrorForCode(st.ErrorCode), st.ErrorMessage)
	}
	got = createTopics(t, cl, true, map[string]int32{"a": 6000, "b": 5000})
	if got["a"].ErrorCode != policy || got["b"].ErrorCode != policy {
		t.Fatalf("11,000 in two topics: %v %v", kerr.ErrorForCode(got["a"].ErrorCode), kerr.ErrorForCode(got["b"].ErrorCode))
	}
	// 10,000 passes Kafka's limit and fails only max.broker.partitions=30.
	got = createTopics(t, cl, true, map[string]int32{"edge": 10000})
	if st := got["edge"]; st.ErrorCode != policy || !strings.Contains(*st.ErrorMessage, "max.broker.partitions=30") {
		t.Fatalf("10,000: %v %v", kerr.ErrorForCode(st.ErrorCode), st.ErrorMessage)
	}
	if n := countPartitionDirs(t, dir); n != 0 {
		t.Fatalf("%d partition directories after refusals", n)
	}
	got = createTopics(t, cl, false, map[string]int32{"small": 20})
	if st := got["small"]; st.ErrorCode != 0 {
		t.Fatalf("20 partitions: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	got = createTopics(t, cl, false, map[string]int32{"over": 11})
	if st := got["over"]; st.ErrorCode != policy {
		t.Fatalf("20 + 11 > 30: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	if st := addPartitions(t, cl, "small", 20+10001); st.ErrorCode != policy || *st.ErrorMessage != msgTooManyAdded {
		t.Fatalf("adding 10,001: %v %v", kerr.ErrorForCode(st.ErrorCode), st.ErrorMessage)
	}
	if st := addPartitions(t, cl, "small", 31); st.ErrorCode != policy {
		t.Fatalf("growing to 31 > 30: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	if st := addPartitions(t, cl, "small", 30); st.ErrorCode != 0 {
		t.Fatalf("growing to 30: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	if n := countPartitionDirs(t, dir); n != 30 {
		t.Fatalf("%d partition directories, want 30", n)
	}
}

// createStallPartitions is how many partitions TestCreateDoesNotStallProduce
// creates (MINIBROKER_CREATE_PARTITIONS overrides: 5000 for the report).
func createStallPartitions() int32 {
	if v, err := strconv.Atoi(os.Getenv("MINIBROKER_CREATE_PARTITIONS")); err == nil && v > 0 {
		return int32(v)
	}
	return 500
}

// While a CreateTopics of many partitions runs, a producer on another
// topic is served: its p99 latency stays far under the creation's
// duration (asserted generously: under a quarter of it and under 2 s).
// Negative control: with creation under the registry lock, a
// produce waits for the whole creation (its max latency is most of it).
func TestCreateDoesNotStallProduce(t *testing.T) {
	for _, underLock := range []bool{false, true} {
		name := "outside-registry-lock"
		if underLock {
			name = "negative-control-under-lock"
		}
		t.Run(name, func(t *testing.T) {
			parts := createStallPartitions()
			if underLock {
				parts = min(parts, 500)
			}
			b, cl := startServing(t, t.TempDir(), nil)
			b.knobs.legacyCreateUnderRegistryLock = underLock
			lat, took := produceLatenciesWhile(t, b, cl, func(admin *kgo.Client) {
				got := createTopics(t, admin, false, map[string]int32{"many": parts})
				if got["many"].ErrorCode != 0 {
					t.Errorf("create: %v", kerr.ErrorForCode(got["many"].ErrorCode))
				}
			})
			if len(lat) == 0 {
				t.Fatal("no produce during the creation")
			}
			p99, worst := lat[len(lat)*99/100], lat[len(lat)-1]
			t.Logf("%s: created %d partitions in %v; %d produces during it: p50 %v p99 %v max %v",
				name, parts, took.Round(time.Millisecond), len(lat), lat[len(lat)/2], p99, worst)
			if underLock {
				if worst < took/2 {
					t.Errorf("negative control: the worst produce waited %v of a %v creation: the lock did not stall it", worst, took)
				}
				return
			}
			if p99 > took/4 || p99 > 2*time.Second {
				t.Errorf("p99 produce latency %v during a %v creation", p99, took)
			}
		})
	}
}

// A creation stopped by shutdown (or a crash at any point: topics.json
// lists a topic only once all its partitions exist) leaves directories
// no topic lists. They are there after the stop (the negative control:
// without the start-up sweep they would stay), and the next start-up
// removes them, logging each; the topic does not exist.
func TestInterruptedCreateLeavesNoOrphans(t *testing.T) {
	dir := t.TempDir()
	b, cl := startServing(t, dir, nil)
	createTopics(t, cl, false, map[string]int32{"kept": 2})
	go func() {
		// Answered with an error or not at all: the broker is killed.
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "cut", 3000, 1
		req.Topics = append(req.Topics, rt)
		req.RequestWith(context.Background(), cl)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for countPartitionDirs(t, dir) < 2+50 {
		if time.Now().After(deadline) {
			t.Fatal("creation did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Kill()
	// A partition past a topic's count (an interrupted CreatePartitions)
	// and one of a topic that is gone (an interrupted DeleteTopics).
	for _, d := range []string{"kept-7", "gone-0"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	orphans := countPartitionDirs(t, dir) - 2
	if orphans < 52 {
		t.Fatalf("%d orphan directories after the kill: the control must show them", orphans)
	}
	core, logs := observer.New(zap.WarnLevel)
	b2, cl2 := startServing(t, dir, zap.New(core))
	if n := countPartitionDirs(t, dir); n != 2 {
		t.Fatalf("%d partition directories after restart, want the 2 of kept", n)
	}
	if got := logs.FilterMessageSnippet("removed an orphan partition directory").Len(); got != orphans {
		t.Errorf("%d removals logged, want %d", got, orphans)
	}
	if _, ok := b2.Topic("cut"); ok {
		t.Error("the interrupted topic exists")
	}
	// The name is free again.
	if got := createTopics(t, cl2, false, map[string]int32{"cut": 3}); got["cut"].ErrorCode != 0 {
		t.Fatalf("recreate: %v", kerr.ErrorForCode(got["cut"].ErrorCode))
	}
}
