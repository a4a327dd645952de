package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/minibrokertest"
)

// fastRefresh is the refresh interval of these tests' mirrors.
const fastRefresh = "100"

// createAutoMirror defines a mirror of src on dst with settings (and a
// short refresh) and starts it without topics: it follows its filters.
func createAutoMirror(t *testing.T, dst itest.Node, src string, settings map[string]string) *mirror.Manager {
	t.Helper()
	cfg := map[string]string{mirror.SettingMetadataRefreshMs: fastRefresh}
	for k, v := range settings {
		cfg[k] = v
	}
	m := itest.MirrorOn(dst)
	itest.Must(t, "create", m.CreateWith("from-a", []string{src}, mirror.CreateOptions{Config: cfg}))
	itest.Must(t, "start", m.Start(t.Context(), "from-a", nil))
	return m
}

func hasTopic(n itest.Node, topic string) bool {
	_, ok := n.Broker().Topic(topic)
	return ok
}

// waitRefreshes waits until the mirror has refreshed at least n more
// times: a topic created at the source now is found by the next refresh,
// so one created before and still absent after n refreshes was not taken.
// It creates a marker topic the filters select and waits for it.
func waitRefreshes(t *testing.T, a, b itest.Node, marker string) {
	t.Helper()
	itest.Must(t, "create marker", kadmCreate(t, a.Addr(), marker, 1))
	itest.WaitFor(t, "marker topic "+marker+" mirrored", func() bool { return hasTopic(b, marker) })
}

func kadmCreate(t *testing.T, addr, topic string, parts int32, configs ...map[string]*string) error {
	t.Helper()
	var cfg map[string]*string
	if len(configs) > 0 {
		cfg = configs[0]
	}
	resp, err := itest.KadmClient(t, addr).CreateTopic(context.Background(), parts, 1, cfg, topic)
	if err != nil {
		return err
	}
	return resp.Err
}

// TestMirrorTopicFilters: a mirror started without topics mirrors the
// source topics mirror.topics.include selects, a topic created at the
// source after the start (and a partition added to it) within a refresh,
// byte for byte; topics mirror.topics.exclude removes, and __-prefixed
// ones by default, never appear. Negative control: with the exclude list
// emptied (the rule removed), the same source topics are mirrored.
func TestMirrorTopicFilters(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 2), minibrokertest.Topic("tmp-scratch", 1),
		minibrokertest.Topic("__audit", 1), minibrokertest.Topic("payments", 1))
	b := minibrokertest.Start(t)
	itest.ProduceTo(t, a.Addr(), "orders", "o", 10)
	itest.ProduceTo(t, a.Addr(), "tmp-scratch", "t", 3)
	itest.ProduceTo(t, a.Addr(), "__audit", "x", 3)
	m := createAutoMirror(t, b, a.Addr(), map[string]string{
		mirror.SettingTopicsInclude: "orders.*,tmp-.*,__.*,marker.*",
		mirror.SettingTopicsExclude: "tmp-.*,__.*",
	})
	// Selected at start.
	itest.WaitMirrored(t, a, b, "orders", 2)
	for p := int32(0); p < 2; p++ {
		itest.AssertIdentical(t, a, b, "orders", p, itest.LogEnd(a, "orders", p))
	}
	// Created at the source after the start, then grown.
	itest.Must(t, "create orders-eu", kadmCreate(t, a.Addr(), "orders-eu", 1))
	itest.ProduceTo(t, a.Addr(), "orders-eu", "eu", 7)
	itest.WaitFor(t, "orders-eu mirrored", func() bool { return hasTopic(b, "orders-eu") })
	itest.WaitMirrored(t, a, b, "orders-eu", 1)
	if _, err := itest.KadmClient(t, a.Addr()).UpdatePartitions(context.Background(), 3, "orders-eu"); err != nil {
		t.Fatal(err)
	}
	itest.ProduceTo(t, a.Addr(), "orders-eu", "eu2", 9)
	itest.WaitFor(t, "orders-eu grown to 3", func() bool { return func() bool { _, ok := b.Broker().Partition("orders-eu", 2); return ok }() })
	itest.WaitMirrored(t, a, b, "orders-eu", 3)
	for p := int32(0); p < 3; p++ {
		itest.AssertIdentical(t, a, b, "orders-eu", p, itest.LogEnd(a, "orders-eu", p))
		if mode, owner := itest.MustPartition(t, b, "orders-eu", p).Mode(); mode != partition.Mirrored || owner != "from-a" {
			t.Fatalf("orders-eu-%d: %v %q, want read-only, mirrored by from-a", p, mode, owner)
		}
	}
	// Excluded and not included: never mirrored, after further refreshes.
	waitRefreshes(t, a, b, "marker-1")
	waitRefreshes(t, a, b, "marker-2")
	for _, topic := range []string{"tmp-scratch", "__audit", "payments"} {
		if hasTopic(b, topic) {
			t.Fatalf("%s mirrored though the filters leave it out", topic)
		}
	}
	st, _ := m.Describe("from-a")
	if !st.AutoTopics || st.Config[mirror.SettingTopicsExclude] != "tmp-.*,__.*" {
		t.Fatalf("describe: auto %v, config %v", st.AutoTopics, st.Config)
	}

	// Negative control: the exclude list removed, the same topics arrive.
	itest.Must(t, "alter", m.AlterSettings("from-a", nil, []string{mirror.SettingTopicsExclude}))
	// The default exclude (__.*) is back: only tmp-scratch comes.
	itest.WaitFor(t, "tmp-scratch mirrored once not excluded", func() bool { return hasTopic(b, "tmp-scratch") })
	waitRefreshes(t, a, b, "marker-3")
	if hasTopic(b, "__audit") {
		t.Fatal("__audit mirrored under the default mirror.topics.exclude (__.*)")
	}
	itest.Must(t, "alter", m.AlterSettings("from-a", map[string]string{mirror.SettingTopicsExclude: ""}, nil))
	itest.WaitFor(t, "__audit mirrored with no exclude list", func() bool { return hasTopic(b, "__audit") })
	itest.WaitMirrored(t, a, b, "__audit", 1)
	itest.AssertIdentical(t, a, b, "__audit", 0, 3)
	// The source's __consumer_offsets, __transaction_state and
	// __mirror_state pass these filters too, and are still never a
	// mirror's target: the local internal topics stay the local
	// coordinators' and mirrors' (TestInternalTopics).
	waitRefreshes(t, a, b, "marker-4")
	for _, topic := range []string{"__consumer_offsets", "__transaction_state", "__mirror_state", "__share_group_state"} {
		if mode, owner := itest.MustPartition(t, b, topic, 0).Mode(); mode == partition.Mirrored {
			t.Fatalf("%s-0 mirrored by %q", topic, owner)
		}
	}
}

// A source topic the filters select whose name exists locally, unknown to
// the mirror, is not taken over: auto-creation would align the local log
// with the source's by truncating it. It is reported by describe and its
// records are intact and it stays writable. Negative control: with the
// rule off (a test hook), the same start makes the local topic read-only,
// mirrored (its records are kept only by the start's truncation guard,
// which then fails the partition).
func TestMirrorAutoCreationLeavesLocalTopics(t *testing.T) {
	t.Parallel()
	for _, takeOver := range []bool{false, true} {
		t.Run(fmt.Sprintf("takeOver=%v", takeOver), func(t *testing.T) {
			a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
			itest.ProduceTo(t, a.Addr(), "orders", "src", 4)
			b := itest.StartBroker(t, itest.BrokerOptions{Mirror: mirror.WithTestHooks(mirror.Options{}, takeOverHooks{take: takeOver})})
			itest.Must(t, "create local", kadmCreate(t, b.Addr(), "orders", 1))
			itest.ProduceTo(t, b.Addr(), "orders", "local", 6)
			m := createAutoMirror(t, b, a.Addr(), map[string]string{mirror.SettingTopicsInclude: "orders|marker.*"})
			waitRefreshes(t, a, b, "marker-1")
			st, _ := m.Describe("from-a")
			got := itest.ReadValues(t, b.Addr(), "orders", 0, 0)
			if takeOver {
				// The local topic is taken: read-only to its own
				// producers (the start guard keeps its records; without
				// it they would be cut).
				itest.WaitFor(t, "local topic taken over", func() bool {
					mode, owner := itest.MustPartition(t, b, "orders", 0).Mode()
					return mode == partition.Mirrored && owner == "from-a"
				})
				return
			}
			if !strings.Contains(st.SkippedTopics["orders"], "exists locally") {
				t.Fatalf("skipped topics %v, want orders with the reason", st.SkippedTopics)
			}
			if strings.Join(got, ",") != strings.Join(itest.Values("local", 6), ",") {
				t.Fatalf("local topic holds %v, want its 6 records intact", got)
			}
			if mode, _ := itest.MustPartition(t, b, "orders", 0).Mode(); mode != partition.Writable {
				t.Fatal("local topic made read-only")
			}
		})
	}
}

type takeOverHooks struct {
	mirror.NoTestHooks
	take bool
}

func (h takeOverHooks) TakeOverLocalTopics() bool { return h.take }

func alterTopicConfigs(t *testing.T, addr, topic string, ops ...kadm.AlterConfig) {
	t.Helper()
	resp, err := itest.KadmClient(t, addr).AlterTopicConfigs(context.Background(), ops, topic)
	itest.Must(t, "alter configs", err)
	for _, r := range resp {
		itest.Must(t, "alter configs "+r.Name, r.Err)
	}
}

// TestMirrorConfigSync: topic configs are copied at start and on every
// refresh: a change at the source reaches the mirror, an override the
// source removes is removed; a property in mirror.topic.properties.exclude
// (min.insync.replicas and message.timestamp.type by default) never
// arrives. Negative control: with the exclude list emptied, the same
// properties arrive.
func TestMirrorConfigSync(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.TopicWithConfigs("orders", 1, map[string]string{
		"retention.ms": "3600000", "message.timestamp.type": "LogAppendTime", "cleanup.policy": "delete"}))
	b := minibrokertest.Start(t)
	m := createAutoMirror(t, b, a.Addr(), map[string]string{mirror.SettingTopicsInclude: "orders|marker.*"})
	itest.WaitFor(t, "orders created", func() bool { return hasTopic(b, "orders") })
	got := itest.DescribeTopicConfigs(t, b.Addr(), "orders")
	if got["retention.ms"] != "3600000" || got["cleanup.policy"] != "delete" {
		t.Fatalf("configs at start %v, want the source's retention.ms and cleanup.policy", got)
	}
	if _, ok := got["message.timestamp.type"]; ok {
		t.Fatalf("message.timestamp.type copied at start: %v", got)
	}
	// Changes at the source: one changed, one removed, an excluded one added.
	alterTopicConfigs(t, a.Addr(), "orders",
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: itest.KmsgStr("7200000")},
		kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "cleanup.policy"},
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: itest.KmsgStr("1")})
	itest.WaitFor(t, "retention.ms synced and cleanup.policy removed", func() bool {
		got := itest.DescribeTopicConfigs(t, b.Addr(), "orders")
		_, cp := got["cleanup.policy"]
		return got["retention.ms"] == "7200000" && !cp
	})
	waitRefreshes(t, a, b, "marker-1")
	waitRefreshes(t, a, b, "marker-2")
	got = itest.DescribeTopicConfigs(t, b.Addr(), "orders")
	for _, k := range []string{"message.timestamp.type", "min.insync.replicas"} {
		if _, ok := got[k]; ok {
			t.Fatalf("%s synced though excluded: %v", k, got)
		}
	}

	// Negative control: nothing excluded, the same properties arrive.
	itest.Must(t, "alter", m.AlterSettings("from-a", map[string]string{mirror.SettingTopicPropertiesExclude: ""}, nil))
	itest.WaitFor(t, "excluded properties synced once not excluded", func() bool {
		got := itest.DescribeTopicConfigs(t, b.Addr(), "orders")
		return got["message.timestamp.type"] == "LogAppendTime" && got["min.insync.replicas"] == "1"
	})
}

// TestMirrorSourceTopicDeleted: with mirror.topic.deleted.policy=stop, a
// mirrored topic deleted at the source is stopped as a failover would
// (STOPPING, barrier, writable; the default, KIP-1279's FAILED, is
// TestMirrorSourceTopicDeletedFails):
// its records up to the deletion are kept, one barrier follows them, a
// local producer then writes after it, and describe says why. Another
// topic of the same mirror keeps mirroring.
func TestMirrorSourceTopicDeleted(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1), minibrokertest.Topic("payments", 1))
	b := minibrokertest.Start(t)
	itest.ProduceTo(t, a.Addr(), "orders", "a", 5)
	m := createAutoMirror(t, b, a.Addr(), map[string]string{mirror.SettingTopicsInclude: "orders|payments|marker.*",
		mirror.SettingTopicDeletedPolicy: mirror.TopicDeletedStop})
	itest.WaitFor(t, "topics created", func() bool { return hasTopic(b, "orders") && hasTopic(b, "payments") })
	itest.WaitMirrored(t, a, b, "orders", 1)
	resp, err := itest.KadmClient(t, a.Addr()).DeleteTopics(context.Background(), "orders")
	itest.Must(t, "delete", err)
	itest.Must(t, "delete", resp.Error())
	itest.WaitFor(t, "orders STOPPED", func() bool {
		st, _ := m.Describe("from-a")
		for _, p := range st.Partitions {
			if p.Topic == "orders" {
				return p.State == mirror.Stopped
			}
		}
		return false
	})
	st, _ := m.Describe("from-a")
	for _, p := range st.Partitions {
		switch p.Topic {
		case "orders":
			if p.BarrierOffset != 5 || p.LastMirroredOffset != 5 || !strings.Contains(p.Reason, "source topic deleted") {
				t.Fatalf("orders after the source deleted it: %+v", p)
			}
		case "payments":
			if p.State != mirror.Mirroring {
				t.Fatalf("payments: %+v, want still MIRRORING", p)
			}
		}
	}
	if got := itest.Barriers(t, b, "orders", 0); fmt.Sprint(got) != "[5]" {
		t.Fatalf("barriers %v, want one at 5", got)
	}
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "orders", 0, "b", 3)
	itest.AssertValues(t, b, "orders", 0, itest.Concat(itest.Values("a", 5), itest.Values("b", 3)))
	// Not auto-created again, though the filters select it, when the
	// source creates it anew: the mirror knows it (STOPPED).
	itest.Must(t, "recreate", kadmCreate(t, a.Addr(), "orders", 1))
	itest.ProduceTo(t, a.Addr(), "payments", "p", 2)
	itest.WaitMirrored(t, a, b, "payments", 1)
	waitRefreshes(t, a, b, "marker-1")
	waitRefreshes(t, a, b, "marker-2")
	st, _ = m.Describe("from-a")
	for _, p := range st.Partitions {
		if p.Topic == "orders" && p.State != mirror.Stopped {
			t.Fatalf("orders after the source recreated it: %+v", p)
		}
	}
	itest.AssertValues(t, b, "orders", 0, itest.Concat(itest.Values("a", 5), itest.Values("b", 3)))
}

// pendingHooks crash a start after it created a topic locally and before
// it recorded the topic's partitions, and switch off the record of the
// topic as the mirror's made before the create (the negative control).
type pendingHooks struct {
	mirror.NoTestHooks
	crashOn     string
	skipPending bool
}

func (h pendingHooks) AfterLocalTopicCreate(topic string) error {
	if topic == h.crashOn {
		return itest.ErrCrash
	}
	return nil
}
func (h pendingHooks) SkipPendingTopics() bool { return h.skipPending }

// TestMirrorCrashAfterAutoCreatedTopic: a crash after auto-creation made a
// topic locally and before it recorded the topic's partitions is resumed
// on restart: the topic is mirrored, byte for byte. Negative control:
// without the record made before the create, the restarted mirror finds
// a local topic it does not know and never mirrors it.
func TestMirrorCrashAfterAutoCreatedTopic(t *testing.T) {
	t.Parallel()
	for _, skipPending := range []bool{false, true} {
		t.Run(fmt.Sprintf("skipPending=%v", skipPending), func(t *testing.T) {
			a := minibrokertest.Start(t, minibrokertest.Topic("auto-1", 1), minibrokertest.Topic("auto-2", 1))
			itest.ProduceTo(t, a.Addr(), "auto-1", "one", 3)
			itest.ProduceTo(t, a.Addr(), "auto-2", "two", 3)
			b := itest.StartBroker(t, itest.BrokerOptions{Mirror: mirror.WithTestHooks(mirror.Options{}, pendingHooks{crashOn: "auto-1", skipPending: skipPending})})
			createAutoMirror(t, b, a.Addr(), map[string]string{mirror.SettingTopicsInclude: "auto-.*"})
			itest.WaitMirrored(t, a, b, "auto-2", 1)
			if !hasTopic(b, "auto-1") {
				t.Fatal("auto-1 not created locally before the crash")
			}
			b.CrashAndRestart(mirror.WithTestHooks(mirror.Options{}, pendingHooks{skipPending: skipPending}))
			waitRefreshes(t, a, b, "auto-marker-1")
			waitRefreshes(t, a, b, "auto-marker-2")
			st, _ := itest.MirrorOn(b).Describe("from-a")
			if skipPending {
				if !strings.Contains(st.SkippedTopics["auto-1"], "exists locally") || itest.LogEnd(b, "auto-1", 0) != 0 {
					t.Fatalf("negative control: skipped %v, auto-1 end %d; want auto-1 left out, empty", st.SkippedTopics, itest.LogEnd(b, "auto-1", 0))
				}
				return
			}
			itest.WaitMirrored(t, a, b, "auto-1", 1)
			itest.AssertIdentical(t, a, b, "auto-1", 0, 3)
			if len(st.SkippedTopics) != 0 {
				t.Fatalf("skipped after restart: %v", st.SkippedTopics)
			}
		})
	}
}

// TestMirrorTopicFiltersFromKfake: the same with a foreign source
// (franz-go's kfake): a topic created there after the start is mirrored,
// an excluded one is not, a config change reaches the mirror (an excluded
// property does not), and a topic deleted there stops its mirror (with
// mirror.topic.deleted.policy=stop).
func TestMirrorTopicFiltersFromKfake(t *testing.T) {
	t.Parallel()
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"), kfake.ClusterID("kfake-src"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	addr := src.ListenAddrs()[0]
	b := minibrokertest.Start(t)
	itest.ProduceTo(t, addr, "orders", "o", 5)
	m := createAutoMirror(t, b, addr, map[string]string{mirror.SettingTopicsInclude: "orders.*|skip-.*", mirror.SettingTopicsExclude: "skip-.*",
		mirror.SettingTopicDeletedPolicy: mirror.TopicDeletedStop})
	itest.WaitFor(t, "orders mirrored", func() bool { return hasTopic(b, "orders") && itest.LogEnd(b, "orders", 0) == 5 })
	itest.Must(t, "create", kadmCreate(t, addr, "orders-eu", 1, map[string]*string{"retention.ms": itest.KmsgStr("3600000")}))
	itest.Must(t, "create", kadmCreate(t, addr, "skip-me", 1))
	itest.ProduceTo(t, addr, "orders-eu", "eu", 4)
	itest.WaitFor(t, "orders-eu mirrored from kfake", func() bool { return hasTopic(b, "orders-eu") && itest.LogEnd(b, "orders-eu", 0) == 4 })
	if got := itest.DescribeTopicConfigs(t, b.Addr(), "orders-eu"); got["retention.ms"] != "3600000" {
		t.Fatalf("orders-eu configs %v, want kfake's retention.ms", got)
	}
	alterTopicConfigs(t, addr, "orders-eu",
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: itest.KmsgStr("7200000")},
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: itest.KmsgStr("1")})
	itest.WaitFor(t, "retention.ms synced from kfake", func() bool {
		return itest.DescribeTopicConfigs(t, b.Addr(), "orders-eu")["retention.ms"] == "7200000"
	})
	if _, ok := itest.DescribeTopicConfigs(t, b.Addr(), "orders-eu")["min.insync.replicas"]; ok {
		t.Fatal("min.insync.replicas synced though excluded by default")
	}
	if hasTopic(b, "skip-me") {
		t.Fatal("skip-me mirrored though excluded")
	}
	resp, err := itest.KadmClient(t, addr).DeleteTopics(context.Background(), "orders-eu")
	itest.Must(t, "delete", err)
	itest.Must(t, "delete", resp.Error())
	itest.WaitFor(t, "orders-eu stopped after kfake deleted it", func() bool {
		st, _ := m.Describe("from-a")
		for _, p := range st.Partitions {
			if p.Topic == "orders-eu" {
				return p.State == mirror.Stopped && p.BarrierOffset == 4
			}
		}
		return false
	})
}

// TestMirrorStopAllEndsTopicFilters: a failover of the whole mirror (stop
// without topics) ends its following of the filters: a topic the source
// creates afterwards is not mirrored into the cluster that took over,
// while before the stop one was (the same filters, the same refresh).
func TestMirrorStopAllEndsTopicFilters(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	b := minibrokertest.Start(t)
	m := createAutoMirror(t, b, a.Addr(), map[string]string{mirror.SettingTopicsInclude: "orders.*"})
	itest.Must(t, "create", kadmCreate(t, a.Addr(), "orders-before", 1))
	itest.WaitFor(t, "orders-before mirrored while following", func() bool { return hasTopic(b, "orders-before") })
	itest.Must(t, "stop", m.Stop("from-a", nil))
	if st, _ := m.Describe("from-a"); st.AutoTopics {
		t.Fatal("still following the filters after a stop of every topic")
	}
	itest.Must(t, "create", kadmCreate(t, a.Addr(), "orders-after", 1))
	time.Sleep(1 * time.Second) // ten refresh intervals
	if hasTopic(b, "orders-after") {
		t.Fatal("a topic created at the source after the failover was mirrored")
	}
}
