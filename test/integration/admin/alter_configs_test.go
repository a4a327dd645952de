package admin

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// kadm alters a topic's segment.bytes and retention.ms with
// IncrementalAlterConfigs: the running partition rolls at the new size at
// once and retention deletes by the new age; DescribeConfigs shows each
// value's source; an invalid value is refused with INVALID_CONFIG naming
// the key and changes nothing (not even the valid op beside it);
// validate_only changes nothing; DELETE goes back to the broker setting;
// and the overrides survive a clean restart and a crash, the partitions
// following them after each.
func TestKadmAlterTopicConfigsAppliedAndDurable(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("alt", 1),
		minibrokertest.Set("log.retention.ms", "86400000"),
		minibrokertest.Set("log.retention.check.interval.ms", "100"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()

	itest.WantConfig(t, adm, "alt", "segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig)
	itest.WantConfig(t, adm, "alt", "retention.ms", "86400000", kmsg.ConfigSourceStaticBrokerConfig)
	itest.ProduceValues(t, cl, "alt", 20, 1000)
	if n := len(itest.SegmentFiles(t, c.DataDir(), "alt", 0)); n != 1 {
		t.Fatalf("%d segments before the alter", n)
	}

	// An invalid value beside a valid one: INVALID_CONFIG naming the key,
	// and neither applied.
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: itest.Sp("1")},
		{Op: kadm.SetConfig, Name: "segment.bytes", Value: itest.Sp("3000000000")},
	}, "alt")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := resp.On("alt", nil); !errors.Is(r.Err, kerr.InvalidConfig) || !strings.Contains(r.ErrMessage, "segment.bytes") {
		t.Fatalf("invalid value: %v %q", r.Err, r.ErrMessage)
	}
	// APPEND to a non-list and an unknown name: INVALID_CONFIG too.
	for _, bad := range []kadm.AlterConfig{
		{Op: kadm.AppendConfig, Name: "retention.ms", Value: itest.Sp("5")},
		{Op: kadm.SetConfig, Name: "retention.msec", Value: itest.Sp("5")},
	} {
		resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{bad}, "alt")
		if r, _ := resp.On("alt", nil); err != nil || !errors.Is(r.Err, kerr.InvalidConfig) || !strings.Contains(r.ErrMessage, bad.Name) {
			t.Fatalf("%+v: %v %v %q", bad, err, r.Err, r.ErrMessage)
		}
	}
	// validate_only: accepted, nothing changes.
	resp, err = adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: itest.Sp("1")}}, "alt")
	if r, _ := resp.On("alt", nil); err != nil || r.Err != nil {
		t.Fatalf("validate only: %v %v", err, r.Err)
	}
	itest.WantConfig(t, adm, "alt", "retention.ms", "86400000", kmsg.ConfigSourceStaticBrokerConfig)
	itest.WantConfig(t, adm, "alt", "segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig)
	itest.ProduceValues(t, cl, "alt", 20, 1000)
	if n := len(itest.SegmentFiles(t, c.DataDir(), "alt", 0)); n != 1 {
		t.Fatalf("%d segments after refused alters", n)
	}

	// segment.bytes: the running partition rolls at the new size.
	resp, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "segment.bytes", Value: itest.Sp("16384")}}, "alt")
	if r, _ := resp.On("alt", nil); err != nil || r.Err != nil {
		t.Fatalf("alter: %v %v", err, r.Err)
	}
	itest.WantConfig(t, adm, "alt", "segment.bytes", "16384", kmsg.ConfigSourceDynamicTopicConfig)
	before := itest.SegmentFiles(t, c.DataDir(), "alt", 0)
	itest.ProduceValues(t, cl, "alt", 60, 1000)
	after := itest.SegmentFiles(t, c.DataDir(), "alt", 0)
	if len(after) < len(before)+3 {
		t.Fatalf("segments %d → %d after 60 KB at segment.bytes=16384", len(before), len(after))
	}
	for name, size := range after {
		if _, old := before[name]; !old && size > 16384 {
			t.Fatalf("new segment %s has %d bytes > 16384", name, size)
		}
	}

	// retention.ms: the next retention run deletes all but the active segment.
	resp, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: itest.Sp("1")}}, "alt")
	if r, _ := resp.On("alt", nil); err != nil || r.Err != nil {
		t.Fatalf("alter: %v %v", err, r.Err)
	}
	itest.WantConfig(t, adm, "alt", "retention.ms", "1", kmsg.ConfigSourceDynamicTopicConfig)
	itest.WaitFor(t, "retention to delete old segments", func() bool { return len(itest.SegmentFiles(t, c.DataDir(), "alt", 0)) == 1 })
	starts, err := adm.ListStartOffsets(ctx, "alt")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("alt", 0); o.Offset <= 0 {
		t.Fatalf("log start offset %d after retention", o.Offset)
	}

	// Both kept over a clean restart and a crash; the partition follows.
	for _, restart := range []struct {
		name string
		do   func()
	}{{"restart", c.Restart}, {"kill", func() { c.Kill(); c.Revive() }}} {
		restart.do()
		cl2, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			t.Fatal(err)
		}
		adm2 := kadm.NewClient(cl2)
		itest.WantConfig(t, adm2, "alt", "segment.bytes", "16384", kmsg.ConfigSourceDynamicTopicConfig)
		itest.WantConfig(t, adm2, "alt", "retention.ms", "1", kmsg.ConfigSourceDynamicTopicConfig)
		before := itest.SegmentFiles(t, c.DataDir(), "alt", 0)
		itest.ProduceValues(t, cl2, "alt", 40, 1000)
		// A roll shows as a segment that was not there before: retention
		// (retention.ms=1) may already have deleted the ones it closed.
		rolled := false
		for name := range itest.SegmentFiles(t, c.DataDir(), "alt", 0) {
			if _, old := before[name]; !old {
				rolled = true
			}
		}
		if !rolled {
			t.Fatalf("%s: no roll at 16384 after 40 KB", restart.name)
		}
		itest.WaitFor(t, restart.name+": retention", func() bool { return len(itest.SegmentFiles(t, c.DataDir(), "alt", 0)) == 1 })
		cl2.Close()
	}

	// DELETE: back to the broker's static setting.
	resp, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, "alt")
	if r, _ := resp.On("alt", nil); err != nil || r.Err != nil {
		t.Fatalf("delete: %v %v", err, r.Err)
	}
	itest.WantConfig(t, adm, "alt", "retention.ms", "86400000", kmsg.ConfigSourceStaticBrokerConfig)
}

// APPEND and SUBTRACT work on a LIST (cleanup.policy), starting from its
// default; the legacy AlterConfigs (kadm's ...State) replaces the whole
// set of overrides.
func TestKadmAlterConfigsListOpsAndLegacyReplace(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.TopicWithConfigs("lst", 1, map[string]string{"retention.ms": "5000"}))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	alter := func(ops ...kadm.AlterConfig) {
		t.Helper()
		resp, err := adm.AlterTopicConfigs(ctx, ops, "lst")
		if r, _ := resp.On("lst", nil); err != nil || r.Err != nil {
			t.Fatalf("%+v: %v %v %s", ops, err, r.Err, r.ErrMessage)
		}
	}
	alter(kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: itest.Sp("compact")})
	itest.WantConfig(t, adm, "lst", "cleanup.policy", "delete,compact", kmsg.ConfigSourceDynamicTopicConfig)
	alter(kadm.AlterConfig{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: itest.Sp("delete")})
	itest.WantConfig(t, adm, "lst", "cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig)
	// A compacted topic takes only keyed records: the partition follows.
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "lst", Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("unkeyed record on a compacted topic: %v", err)
	}
	itest.WantConfig(t, adm, "lst", "retention.ms", "5000", kmsg.ConfigSourceDynamicTopicConfig)

	// Legacy AlterConfigs: only what is given remains.
	resp, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "segment.bytes", Value: itest.Sp("65536")}}, "lst")
	if r, _ := resp.On("lst", nil); err != nil || r.Err != nil {
		t.Fatalf("legacy alter: %v %v", err, r.Err)
	}
	itest.WantConfig(t, adm, "lst", "segment.bytes", "65536", kmsg.ConfigSourceDynamicTopicConfig)
	itest.WantConfig(t, adm, "lst", "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)
	itest.WantConfig(t, adm, "lst", "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "lst", Value: []byte("no key")}).FirstErr(); err != nil {
		t.Fatalf("unkeyed record after the policy went back to delete: %v", err)
	}
	// Legacy, invalid: INVALID_CONFIG naming the key, nothing changes.
	resp, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "message.timestamp.type", Value: itest.Sp("Bogus")}}, "lst")
	if r, _ := resp.On("lst", nil); err != nil || !errors.Is(r.Err, kerr.InvalidConfig) || !strings.Contains(r.ErrMessage, "message.timestamp.type") {
		t.Fatalf("legacy invalid: %v %v %q", err, r.Err, r.ErrMessage)
	}
	itest.WantConfig(t, adm, "lst", "segment.bytes", "65536", kmsg.ConfigSourceDynamicTopicConfig)
	// Unknown topic; a read-only broker setting (dynamic ones:
	// TestDynamicBrokerConfigs).
	resp, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: itest.Sp("1")}}, "nope")
	if r, _ := resp.On("nope", nil); !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %v", r.Err)
	}
	bresp, _ := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.check.interval.ms", Value: itest.Sp("1")}}, 0)
	if len(bresp) != 1 || !errors.Is(bresp[0].Err, kerr.InvalidRequest) {
		t.Fatalf("broker alter: %+v", bresp)
	}
}

// DescribeLogDirs reports each partition's size as the bytes of its
// segment files on disk.
func TestKadmDescribeLogDirsSizesMatchFiles(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("ld", 2), minibrokertest.Topic("other", 1),
		minibrokertest.Set("log.segment.bytes", "8192"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	itest.ProduceValues(t, cl, "ld", 30, 700)
	adm := kadm.NewClient(cl)
	all, err := adm.DescribeAllLogDirs(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs := all[0]
	if len(all) != 1 || len(dirs) != 1 {
		t.Fatalf("log dirs %+v", all)
	}
	for _, d := range dirs {
		if d.Err != nil || !filepath.IsAbs(d.Dir) {
			t.Fatalf("dir %q: %v", d.Dir, d.Err)
		}
		for _, tp := range [][2]any{{"ld", 0}, {"ld", 1}, {"other", 0}} {
			topic, p := tp[0].(string), tp[1].(int)
			var disk int64
			files := itest.SegmentFiles(t, c.DataDir(), topic, p)
			for _, n := range files {
				disk += n
			}
			got, ok := d.Topics.Lookup(topic, int32(p))
			if !ok || got.Size != disk {
				t.Fatalf("%s-%d: described %d (%v), files %d", topic, p, got.Size, ok, disk)
			}
			if topic == "ld" && p == 0 && (disk < 30*700 || len(files) < 2) {
				t.Fatalf("ld-0: %d bytes in %d files", disk, len(files))
			}
		}
	}
	// Asking for one topic answers only it.
	some, err := adm.DescribeAllLogDirs(context.Background(), kadm.TopicsSet{"other": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range some[0] {
		if len(d.Topics) != 1 || len(d.Topics["other"]) != 1 {
			t.Fatalf("filtered: %+v", d.Topics)
		}
	}
}
