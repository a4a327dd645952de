package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRollRefusedByReadOnlyDirRetried: the rule of log/retry.go, that a
// roll whose new segment the file system refuses leaves the partition
// writable and retries the roll, held end to end. 16 records are
// acknowledged, segment.bytes is lowered so the next append rolls, and
// the partition directory is made read-only (errorfs.SetReadOnlyDir: the
// EACCES a non-root process gets from chmod a-w; the tests run as root,
// which chmod does not stop). That produce fails with
// KAFKA_STORAGE_ERROR; once the directory is writable again the next
// produce succeeds without a restart and all 17 records are served.
// Unflushed, the old segment's offset index has no file yet (indexes are
// created lazily) and the roll is refused creating it; flushed first,
// the index files exist and the roll is refused creating the new segment.
func TestRollRefusedByReadOnlyDirRetried(t *testing.T) {
	for _, flushed := range []bool{false, true} {
		t.Run(fmt.Sprintf("flushed=%v", flushed), func(t *testing.T) { testRollRefusedByReadOnlyDir(t, flushed) })
	}
}

func testRollRefusedByReadOnlyDir(t *testing.T, flushed bool) {
	b, e := newErrorFSBroker(t, t.TempDir())
	b.Serve()
	defer b.Close(context.Background())
	if _, err := b.CreateTopic("ro", 1, nil, [16]byte{}, false); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordRetries(0), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(v string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// 1000 bytes: the 16 records pass log.index.interval.bytes, so
		// the offset index has entries (a flush creates its file).
		value := append([]byte(v), make([]byte, 1000-len(v))...)
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "ro", Value: value}).FirstErr()
	}
	for i := range 16 {
		if err := produce("r-" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := b.Partition("ro", 0)
	if flushed {
		if err := p.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(filepath.Join(p.Dir(), fmt.Sprintf("%020d.log", 0)))
	if err != nil {
		t.Fatal(err)
	}
	size := strconv.FormatInt(fi.Size(), 10) // the next batch does not fit: it rolls
	resp, err := kadm.NewClient(cl).AlterTopicConfigs(context.Background(),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "segment.bytes", Value: &size}}, "ro")
	if r, _ := resp.On("ro", nil); err != nil || r.Err != nil {
		t.Fatalf("alter segment.bytes: %v %v", err, r.Err)
	}

	e.SetReadOnlyDir(p.Dir(), true)
	err = produce("refused")
	t.Logf("produce into the read-only directory: %v (file system: %q)", err, e.Injected())
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce into a read-only partition directory: %v, want KAFKA_STORAGE_ERROR", err)
	}
	e.SetReadOnlyDir(p.Dir(), false)
	if err := produce("after"); err != nil {
		t.Fatalf("produce once the directory is writable again: %v (offline: %v)", err, p.Offline())
	}
	if err := p.Offline(); err != nil {
		t.Fatalf("partition offline after the retried roll: %v", err)
	}
	if n := readCount(t, b.Addr(), "ro", 17); n != 17 {
		t.Fatalf("read %d records, want the 17 acknowledged", n)
	}
}
