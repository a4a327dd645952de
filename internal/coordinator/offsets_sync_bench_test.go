package coordinator

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/vfs"
)

// BenchmarkMultiPartitionSync: a group coordinator write that lands in
// many __consumer_offsets partitions (a deleted topic's offsets dropped
// from 50 groups, one group per partition of 50) and waits for all of
// them, with the partitions' fsyncs issued together (syncParts) beside
// the same wait one partition after the other (knobs.sequentialSync),
// in alternating rounds; medians of the rounds.
func BenchmarkMultiPartitionSync(b *testing.B) {
	const parts, rounds = 50, 5
	groupsOf := map[string]*Groups{}
	for _, rule := range []string{"parallel", "sequential"} {
		dir := b.TempDir()
		topic, _ := openOffsetsTopicN(b, vfs.Default, dir, parts)
		g, err := OpenGroups(GroupsOptions{FS: vfs.Default, Dir: dir, TickInterval: time.Hour, OffsetsTopic: topic,
			private: knobs{sequentialSync: rule == "sequential"},
			Config:  GroupConfig{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, OffsetsRetention: time.Hour}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { g.Close() })
		groupsOf[rule] = g
	}
	// One group id per partition.
	ids := idsInDistinctPartitions("g", int(parts), parts)
	for range b.N {
		took := map[string][]time.Duration{}
		for r := range rounds {
			for _, rule := range []string{"parallel", "sequential"} {
				g := groupsOf[rule]
				topicName := fmt.Sprintf("t-%d", r)
				for _, id := range ids {
					if err := g.CommitOffsetsAdmin(id, map[TopicPartition]OffsetAndMetadata{
						{Topic: topicName, Partition: 0}: {Offset: 1, LeaderEpoch: -1}}); err != nil {
						b.Fatal(err)
					}
				}
				start := time.Now()
				if err := g.DeleteTopicOffsets(topicName); err != nil {
					b.Fatal(err)
				}
				took[rule] = append(took[rule], time.Since(start))
			}
		}
		for _, rule := range []string{"parallel", "sequential"} {
			slices.Sort(took[rule])
			b.ReportMetric(float64(took[rule][rounds/2].Microseconds()), rule+"-µs")
		}
		b.Logf("DeleteTopicOffsets over %d partitions: parallel %v, sequential %v", parts, took["parallel"], took["sequential"])
	}
}

// idsInDistinctPartitions returns n ids, prefix-0, prefix-1, ..., skipping
// any whose partition (PartitionFor over parts) an earlier one took.
func idsInDistinctPartitions(prefix string, n int, parts int32) []string {
	var ids []string
	seen := map[int32]bool{}
	for i := 0; len(ids) < n; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if p := PartitionFor(id, parts); !seen[p] {
			seen[p] = true
			ids = append(ids, id)
		}
	}
	return ids
}
