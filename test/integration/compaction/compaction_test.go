package compaction

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/logtool"
)

// TestCompactionWithKgo drives the log cleaner with real clients: a kgo
// transactional producer writes keyed records, tombstones and aborted
// transactions to a cleanup.policy=compact topic; once the cleaner has
// run, a read_committed consumer from offset 0 sees exactly the latest
// value of each live key, each at the offset its producer was told; no
// aborted record is left even for read_uncommitted; tombstones stay until
// delete.retention.ms has passed and then go.
func TestCompactionWithKgo(t *testing.T) {
	r := itest.StartBroker(t, itest.BrokerOptions{Config: func(c *config.Config) { c.Kafka["log.cleaner.backoff.ms"] = "50" }})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := itest.KadmClient(t, r.Addr())
	sp := func(s string) *string { return &s }
	res, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy": sp("compact"), "segment.bytes": sp("4096"),
		"min.cleanable.dirty.ratio": sp("0.01"), "delete.retention.ms": sp("3000"),
	}, "changelog")
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}

	prod := itest.NewClient(t, r.Addr(), kgo.TransactionalID("compaction-test"), kgo.DefaultProduceTopic("changelog"))
	type kept struct {
		value  string // "" for a tombstone
		offset int64
	}
	latest := map[string]kept{} // committed only
	var produced int64          // record bytes, a floor for the uncleaned log's size
	aborted := map[string]bool{}
	for txn := range 40 {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		abort := txn%5 == 3
		pending := map[string]kept{}
		for i := range 10 {
			key := fmt.Sprintf("k%02d", (txn*7+i)%30)
			rec := &kgo.Record{Key: []byte(key), Value: []byte(fmt.Sprintf("v%d-%d", txn, i))}
			if !abort && (txn*10+i)%13 == 0 {
				rec.Value = nil // a tombstone
			}
			if abort {
				aborted[string(rec.Value)] = true
			}
			out, err := prod.ProduceSync(ctx, rec).First()
			if err != nil {
				t.Fatal(err)
			}
			produced += int64(len(rec.Key) + len(rec.Value))
			pending[key] = kept{string(rec.Value), out.Offset}
		}
		end := kgo.TryCommit
		if abort {
			end = kgo.TryAbort
		}
		if err := prod.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
		if !abort {
			for k, v := range pending {
				latest[k] = v
			}
		}
	}
	// Filler with keys of its own rolls the segments holding the keys
	// above out of the active one, so they are all cleanable.
	fill := func(n int, tag string) int64 {
		var last int64
		for i := range n {
			if err := prod.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			out, err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("filler-%s-%d", tag, i)), Value: []byte(strings.Repeat("x", 400))}).First()
			if err != nil {
				t.Fatal(err)
			}
			produced += 400
			if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
			last = out.Offset
		}
		return last
	}
	// kafka-log-dirs' size (DescribeLogDirs) is the files' size and
	// follows the cleaning.
	logDirSize := func() int64 {
		all, err := adm.DescribeAllLogDirs(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, dirs := range all {
			for _, d := range dirs {
				if got, ok := d.Topics.Lookup("changelog", 0); ok {
					return got.Size
				}
			}
		}
		t.Fatal("changelog-0 not described")
		return 0
	}
	p := itest.MustPartition(t, r, "changelog", 0)
	fill(20, "a")
	var lastReal int64
	for _, v := range latest {
		lastReal = max(lastReal, v.offset)
	}
	itest.WaitFor(t, "the cleaner to pass the keyed records", func() bool {
		cp, _ := p.CleanerCheckpoint()
		return cp > lastReal+1
	})

	type seen struct {
		value  string
		offset int64
	}
	read := func(level kgo.IsolationLevel) map[string][]seen {
		cl := itest.NewClient(t, r.Addr(), kgo.ConsumeTopics("changelog"), kgo.FetchIsolationLevel(level),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		hw := itest.EndOffset(t, cl, "changelog", 0)
		got := map[string][]seen{}
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatal(ctx.Err())
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
			done := false
			fs.EachRecord(func(rec *kgo.Record) {
				if !strings.HasPrefix(string(rec.Key), "filler") {
					got[string(rec.Key)] = append(got[string(rec.Key)], seen{string(rec.Value), rec.Offset})
				}
				done = done || rec.Offset >= hw-2
			})
			if done {
				return got
			}
		}
	}
	check := func(what string, wantTombstones bool) {
		for _, level := range []kgo.IsolationLevel{kgo.ReadCommitted(), kgo.ReadUncommitted()} {
			got := read(level)
			for k, want := range latest {
				if want.value == "" && !wantTombstones {
					if len(got[k]) != 0 {
						t.Fatalf("%s: tombstoned key %s still read: %+v", what, k, got[k])
					}
					continue
				}
				if len(got[k]) != 1 || got[k][0].value != want.value || got[k][0].offset != want.offset {
					t.Fatalf("%s: key %s read as %+v, want exactly %+v", what, k, got[k], want)
				}
			}
			for k, recs := range got {
				for _, s := range recs {
					if aborted[s.value] {
						t.Fatalf("%s: aborted record %s=%s at %d read", what, k, s.value, s.offset)
					}
				}
			}
		}
	}
	check("after cleaning", true)
	var disk int64
	for _, n := range itest.SegmentFiles(t, r.Cfg.DataDir, "changelog", 0) {
		disk += n
	}
	if size := logDirSize(); size != disk || size >= produced {
		t.Fatalf("DescribeLogDirs size %d, segment files %d, bytes produced %d", size, disk, produced)
	}
	// dump-log shows the cleaned batches' delete horizon and the
	// cleaner's checkpoint.
	var dump strings.Builder
	if err := logtool.NewDumper(&dump, logtool.Options{}).DumpPath(p.Dir()); err != nil {
		t.Fatal(err)
	}
	cp, _ := p.CleanerCheckpoint()
	if !strings.Contains(dump.String(), "| cleaned: deleteHorizonMs: ") ||
		!strings.Contains(dump.String(), fmt.Sprintf("version: 0 offset: %d\n", cp)) {
		t.Fatalf("dump-log shows no cleaned batch or checkpoint %d:\n%s", cp, dump.String())
	}

	// Past delete.retention.ms, the next pass (more data makes the log
	// dirty enough) removes the tombstones.
	time.Sleep(3100 * time.Millisecond)
	before, _ := p.CleanerCheckpoint()
	fill(20, "b")
	itest.WaitFor(t, "another pass", func() bool {
		cp, _ := p.CleanerCheckpoint()
		return cp > before
	})
	check("past delete.retention.ms", false)
}
