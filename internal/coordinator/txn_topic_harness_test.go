package coordinator

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/minibroker/minibroker/internal/itopic"
	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/vfs"
)

// testTxnPartitions is the __transaction_state partition count of these
// tests: more than one, so ids spread over partitions.
const testTxnPartitions = 3

// partTopic is a TxnStateTopic over real partitions, as the broker's
// (internal/broker/txn_state_topic.go).
type partTopic struct{ itopic.Log }

func (p partTopic) Append(n int32, recs []TopicRecord) (int64, error) {
	end, err := p.Log.Append(n, len(recs), func(i int) ([]byte, []byte) { return recs[i].Key, recs[i].Value })
	if errors.Is(err, partition.ErrTooLarge) {
		err = fmt.Errorf("%w: %v", ErrRecordTooLarge, err)
	}
	return end, err
}

// openTxnTopic opens dir's __transaction_state partitions on fs (closed
// when the test ends).
func openTxnTopic(t testing.TB, fs vfs.FS, dir string) partTopic {
	t.Helper()
	return openTxnTopicN(t, fs, dir, testTxnPartitions)
}

// openTxnTopicN is openTxnTopic with n partitions.
func openTxnTopicN(t testing.TB, fs vfs.FS, dir string, n int32) partTopic {
	t.Helper()
	l := itopic.Log{Topic: "__transaction_state"}
	cfg := partition.Config{Log: mlog.DefaultConfig(), MessageMaxBytes: 1 << 20, Compacted: true}
	for i := range n {
		p, err := partition.Open(filepath.Join(dir, fmt.Sprintf("__transaction_state-%d", i)), "__transaction_state", i, cfg,
			partition.Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		l.Parts = append(l.Parts, p)
	}
	return partTopic{l}
}
