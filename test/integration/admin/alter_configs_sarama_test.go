package admin

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/IBM/sarama"

	"github.com/minibroker/minibroker/minibrokertest"
)

// sarama alters a topic's segment.bytes and retention.ms with both APIs
// (IncrementalAlterConfig: 44, AlterConfig: 33): the running partition
// rolls at the new size and retention deletes by the new age; an invalid
// value is INVALID_CONFIG naming the key and changes nothing;
// DescribeConfig shows the sources; a restart keeps the overrides; and
// DescribeLogDirs' sizes match the segment files.
func TestSaramaAlterTopicConfigs(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("salt", 1),
		minibrokertest.Set("log.retention.check.interval.ms", "100"))
	cfg := itest.SaramaConfig(sarama.V3_6_0_0)
	cfg.Admin.Retry.Max = 1
	cfg.Admin.Retry.Backoff = 10 * time.Millisecond
	adm, err := sarama.NewClusterAdmin([]string{c.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { adm.Close() }()
	prod, err := sarama.NewSyncProducer([]string{c.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { prod.Close() }()
	produce := func(p sarama.SyncProducer, n int) {
		t.Helper()
		for range n {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "salt", Partition: 0,
				Value: sarama.StringEncoder(strings.Repeat("s", 1000))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	describe := func(a sarama.ClusterAdmin, name string) sarama.ConfigEntry {
		t.Helper()
		es, err := itest.SaramaDescribeConfig(a, sarama.ConfigResource{Type: sarama.TopicResource, Name: "salt", ConfigNames: []string{name}})
		if err != nil || len(es) != 1 {
			t.Fatalf("describe %s: %v %+v", name, err, es)
		}
		return es[0]
	}

	// Incremental: an invalid value beside a valid one changes nothing.
	err = adm.IncrementalAlterConfig(sarama.TopicResource, "salt", map[string]sarama.IncrementalAlterConfigsEntry{
		"segment.bytes": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: itest.Sp("3000000000")},
		"retention.ms":  {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: itest.Sp("1")},
	}, false)
	if !errors.Is(err, sarama.ErrInvalidConfig) || !strings.Contains(err.Error(), "segment.bytes") {
		t.Fatalf("invalid incremental alter: %v", err)
	}
	if e := describe(adm, "retention.ms"); e.Value != "604800000" || e.Source != sarama.SourceDefault {
		t.Fatalf("after refusal: %+v", e)
	}
	// Incremental SET segment.bytes: the partition rolls at it.
	if err := adm.IncrementalAlterConfig(sarama.TopicResource, "salt", map[string]sarama.IncrementalAlterConfigsEntry{
		"segment.bytes": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: itest.Sp("16384")},
	}, false); err != nil {
		t.Fatal(err)
	}
	if e := describe(adm, "segment.bytes"); e.Value != "16384" || e.Source != sarama.SourceTopic {
		t.Fatalf("segment.bytes: %+v", e)
	}
	produce(prod, 60)
	if n := len(itest.SegmentFiles(t, c.DataDir(), "salt", 0)); n < 3 {
		t.Fatalf("%d segments after 60 KB at segment.bytes=16384", n)
	}

	// Legacy AlterConfig: invalid refused with the key, nothing changes.
	var aerr *sarama.AlterConfigError
	err = adm.AlterConfig(sarama.TopicResource, "salt", map[string]*string{"segment.bytes": itest.Sp("16384"), "retention.ms": itest.Sp("-7")}, false)
	if !errors.As(err, &aerr) || aerr.Err != sarama.ErrInvalidConfig || !strings.Contains(aerr.ErrMsg, "retention.ms") {
		t.Fatalf("invalid legacy alter: %v", err)
	}
	// Legacy AlterConfig: the whole set; retention deletes old segments.
	if err := adm.AlterConfig(sarama.TopicResource, "salt", map[string]*string{"segment.bytes": itest.Sp("16384"), "retention.ms": itest.Sp("1")}, false); err != nil {
		t.Fatal(err)
	}
	if e := describe(adm, "retention.ms"); e.Value != "1" || e.Source != sarama.SourceTopic {
		t.Fatalf("retention.ms: %+v", e)
	}
	itest.WaitFor(t, "retention", func() bool { return len(itest.SegmentFiles(t, c.DataDir(), "salt", 0)) == 1 })

	// DescribeLogDirs: the size is the segment files'.
	var disk int64
	for _, n := range itest.SegmentFiles(t, c.DataDir(), "salt", 0) {
		disk += n
	}
	dirs, err := adm.DescribeLogDirs([]int32{0})
	if err != nil || len(dirs[0]) != 1 {
		t.Fatalf("describe log dirs: %v %+v", err, dirs)
	}
	var described int64 = -1
	for _, tp := range dirs[0][0].Topics {
		if tp.Topic == "salt" {
			for _, p := range tp.Partitions {
				if p.PartitionID == 0 {
					described = p.Size
				}
			}
		}
	}
	if described != disk {
		t.Fatalf("described %d bytes, files %d", described, disk)
	}

	// A restart keeps both overrides.
	prod.Close()
	adm.Close()
	c.Restart()
	adm, err = sarama.NewClusterAdmin([]string{c.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"segment.bytes": "16384", "retention.ms": "1"} {
		if e := describe(adm, name); e.Value != want || e.Source != sarama.SourceTopic {
			t.Fatalf("after restart %s: %+v", name, e)
		}
	}
	prod, err = sarama.NewSyncProducer([]string{c.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	produce(prod, 40)
	itest.WaitFor(t, "retention after restart", func() bool { return len(itest.SegmentFiles(t, c.DataDir(), "salt", 0)) == 1 })
}
