package coordinator

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/itopic"
	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/vfs"
)

// testOffsetsPartitions is the __consumer_offsets partition count of
// these tests: more than one, so groups spread over partitions.
const testOffsetsPartitions = 3

// offsetsPartTopic is an OffsetsTopic over real partitions, as the
// broker's (internal/broker/offsets_topic.go).
type offsetsPartTopic struct{ itopic.Log }

func (o offsetsPartTopic) Append(p int32, recs []TopicRecord, txn TopicProducer) (int64, error) {
	return o.AppendAs(p, len(recs), func(i int) ([]byte, []byte) { return recs[i].Key, recs[i].Value },
		itopic.Producer{ID: txn.ID, Epoch: txn.Epoch})
}

func (o offsetsPartTopic) Replay(p int32, fn func(b TopicBatch, key, value []byte)) error {
	return o.ReplayBatches(p, func(b itopic.BatchInfo, key, value []byte) {
		fn(TopicBatch{Producer: TopicProducer{ID: b.Producer.ID, Epoch: b.Producer.Epoch},
			Transactional: b.Transactional, Control: b.Control, Commit: b.Commit}, key, value)
	})
}

// openOffsetsTopic opens dir's __consumer_offsets partitions on fs
// (closed when the test ends, or by close).
func openOffsetsTopic(t testing.TB, fs vfs.FS, dir string) (o offsetsPartTopic, close func()) {
	t.Helper()
	return openOffsetsTopicN(t, fs, dir, testOffsetsPartitions)
}

// openOffsetsTopicN is openOffsetsTopic with n partitions.
func openOffsetsTopicN(t testing.TB, fs vfs.FS, dir string, n int32) (o offsetsPartTopic, close func()) {
	t.Helper()
	l := itopic.Log{Topic: "__consumer_offsets"}
	cfg := partition.Config{Log: mlog.DefaultConfig(), MessageMaxBytes: 1 << 20, Compacted: true}
	for i := range n {
		p, err := partition.Open(filepath.Join(dir, fmt.Sprintf("__consumer_offsets-%d", i)), "__consumer_offsets", i, cfg,
			partition.Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		l.Parts = append(l.Parts, p)
	}
	return offsetsPartTopic{l}, func() {
		for _, p := range l.Parts {
			p.Close()
		}
	}
}

// openTopicGroups opens the group coordinator on fs's /data, its store
// __consumer_offsets over real partitions there (closed with the test).
func openTopicGroups(t *testing.T, fs vfs.FS, k knobs) *Groups {
	t.Helper()
	topic, _ := openOffsetsTopic(t, fs, "/data")
	g, err := OpenGroups(GroupsOptions{
		FS: fs, Dir: "/data", TickInterval: 10 * time.Millisecond, private: k, OffsetsTopic: topic,
		Config: GroupConfig{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, OffsetsRetention: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}
