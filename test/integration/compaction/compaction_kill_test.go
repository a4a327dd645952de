package compaction

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"
)

// cleanerFiles lists the cleaner's in-flight files (.cleaned, .swap) in a
// partition directory.
func cleanerFiles(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".cleaned") || strings.HasSuffix(e.Name(), ".swap") {
			out = append(out, e.Name())
		}
	}
	return out
}

// killRecord is one record as the test knows it: its key, its value (""
// for a tombstone) and the offset it was written at.
type killRecord struct {
	key, value string
	offset     int64
}

// TestBinaryKill9DuringCleaning runs the built binary cleaning a large
// compacted topic (tens of MB over 512 KiB segments, thousands of keys,
// tombstones) while an idempotent kgo producer keeps writing, and kills
// it with SIGKILL at random points of its cleaning passes (a random delay
// after a .cleaned or .swap file appears), several times. After every
// restart a consumer from offset 0 reads the whole partition: no offset
// twice, every record at the offset it was acknowledged at, the latest
// acknowledged record of every key still there (or superseded by a later
// one of its key). At the end, once the cleaner has passed every keyed
// record, the consumer sees exactly one record per key — the latest the
// log ever held — at its original offset.
func TestBinaryKill9DuringCleaning(t *testing.T) {
	t.Parallel()
	const (
		topic    = "compacted"
		keys     = 2000
		valueLen = 900
		kills    = 5
	)
	dir := t.TempDir()
	partDir := filepath.Join(dir, topic+"-0")
	args := []string{"--set", "log.cleaner.backoff.ms=20", "--set", "log.cleaner.dedupe.buffer.size=8388608"}
	p := itest.StartBinary(t, dir, args...)
	adm := itest.KadmClient(t, p.Addr)
	res, err := adm.CreateTopic(context.Background(), 1, 1, map[string]*string{
		"cleanup.policy": itest.Sp("compact"), "segment.bytes": itest.Sp(strconv.Itoa(512 << 10)),
		"min.cleanable.dirty.ratio": itest.Sp("0.05"),
	}, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 32))
	pad := strings.Repeat("x", valueLen)
	seq := 0 // the next record's sequence, unique across rounds

	// acked: value → offset, for every acknowledged record.
	acked := map[string]int64{}
	latestAcked := map[string]killRecord{} // key → its latest acknowledged record
	var mu sync.Mutex

	// produce writes records until stop is closed, then waits for the
	// callbacks (a killed broker fails what was in flight).
	produce := func(addr string, stop <-chan struct{}) (done func() int) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
			kgo.ProducerBatchCompression(kgo.NoCompression()), // the sizes below are the log's
			kgo.RecordRetries(2), kgo.RecordDeliveryTimeout(2*time.Second), kgo.ProducerLinger(5*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		n := 0
		loop := make(chan struct{})
		go func() {
			defer close(loop)
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				i := seq
				seq++
				mu.Unlock()
				k := fmt.Sprintf("k%04d", rng.IntN(keys))
				rec := &kgo.Record{Key: []byte(k), Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte(strconv.Itoa(i))}}}
				v := ""
				if i%11 != 5 {
					v = fmt.Sprintf("%s/%d/%s", k, i, pad)
					rec.Value = []byte(v)
				}
				wg.Add(1)
				cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
					defer wg.Done()
					if err != nil {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					id := string(r.Headers[0].Value)
					acked[id] = r.Offset
					if cur, ok := latestAcked[k]; !ok || r.Offset > cur.offset {
						latestAcked[k] = killRecord{k, v, r.Offset}
					}
					n++
				})
				if i%128 == 0 {
					time.Sleep(time.Millisecond) // let the cleaner have the disk too
				}
			}
		}()
		return func() int {
			<-loop
			cl.Close() // fails what is still buffered or in flight
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			return n
		}
	}

	// readAll reads the partition from offset 0 to its end and checks it
	// against what was acknowledged; it returns the latest record of
	// each key it read.
	readAll := func(addr, what string) map[string]killRecord {
		t.Helper()
		end := itest.EndOffset(t, itest.NewClient(t, addr), topic, 0)
		cl := itest.NewClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchMaxWait(100*time.Millisecond))
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		latest := map[string]killRecord{}
		seen := map[string]bool{}
		last, n := int64(-1), 0
		for last < end-1 {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: read up to %d of %d: %v", what, last, end, ctx.Err())
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("%s: fetch: %v", what, err) })
			fs.EachRecord(func(r *kgo.Record) {
				n++
				if r.Offset <= last {
					t.Fatalf("%s: offset %d served after %d", what, r.Offset, last)
				}
				last = r.Offset
				if len(r.Headers) != 1 || r.Headers[0].Key != "seq" {
					t.Fatalf("%s: record at %d without its seq header", what, r.Offset)
				}
				id := string(r.Headers[0].Value)
				if seen[id] {
					t.Fatalf("%s: record %s read twice", what, id)
				}
				seen[id] = true
				if r.Value != nil && !strings.HasPrefix(string(r.Value), string(r.Key)+"/"+id+"/") {
					t.Fatalf("%s: record at %d has key %s and value %.20q", what, r.Offset, r.Key, r.Value)
				}
				mu.Lock()
				off, ok := acked[id]
				mu.Unlock()
				if ok && off != r.Offset {
					t.Fatalf("%s: record %s acknowledged at %d read at %d", what, id, off, r.Offset)
				}
				latest[string(r.Key)] = killRecord{string(r.Key), string(r.Value), r.Offset}
			})
		}
		mu.Lock()
		defer mu.Unlock()
		for k, a := range latestAcked {
			if got, ok := latest[k]; !ok || got.offset < a.offset {
				t.Fatalf("%s: key %s acknowledged at %d, latest read %+v: an acknowledged record lost", what, k, a.offset, got)
			}
		}
		t.Logf("%s: %d records read up to offset %d, %d keys", what, n, end, len(latest))
		return latest
	}

	var truth map[string]killRecord
	midClean := 0
	for round := range kills {
		stop := make(chan struct{})
		done := produce(p.Addr, stop)
		// The first round writes a log big enough for long passes; every
		// round then waits for a pass to be under way and kills the
		// broker a random time into it.
		want := int64(2 << 20) // bytes acknowledged in this round
		if round == 0 {
			want = 8 << 20
		}
		mu.Lock()
		before := int64(len(acked))
		mu.Unlock()
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			n := int64(len(acked)) - before
			mu.Unlock()
			if n*valueLen >= want || time.Now().After(deadline) {
				break
			}
		}
		sawPass := false
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if len(cleanerFiles(partDir)) > 0 {
				sawPass = true
				break
			}
		}
		time.Sleep(time.Duration(rng.IntN(40_000)) * time.Microsecond)
		p.Stop(t, syscall.SIGKILL)
		left := cleanerFiles(partDir)
		if len(left) > 0 {
			midClean++
		}
		close(stop)
		n := done()
		t.Logf("round %d: %d records acknowledged, pass seen %v, killed leaving %v", round, n, sawPass, left)

		// Recovery removes what the killed pass left before the broker
		// serves; a pass the restarted broker begins at once may make
		// new ones (even of the same name), written after the restart.
		restartAt := time.Now()
		p = itest.StartBinary(t, dir, args...)
		for _, f := range cleanerFiles(partDir) {
			if fi, err := os.Stat(filepath.Join(partDir, f)); err == nil && fi.ModTime().Before(restartAt) {
				t.Fatalf("round %d: cleaner file %s (written %v, before the restart at %v) left after restart", round, f, fi.ModTime(), restartAt)
			}
		}
		truth = readAll(p.Addr, fmt.Sprintf("after kill %d", round+1))
	}
	if midClean == 0 {
		t.Fatalf("no kill of %d left a .cleaned or .swap file: none hit a pass", kills)
	}

	// Records with keys of their own roll the last keyed record out of
	// the active segment; then the cleaner passes it.
	var lastKeyed int64
	for _, r := range truth {
		lastKeyed = max(lastKeyed, r.offset)
	}
	filler := itest.NewClient(t, p.Addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := range 700 { // > 512 KiB
		rec := &kgo.Record{Key: []byte(fmt.Sprintf("filler-%d", i)), Value: []byte(pad),
			Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte("filler-" + strconv.Itoa(i))}}}
		filler.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("filler: %v", err)
			}
		})
	}
	if err := filler.Flush(context.Background()); err != nil || t.Failed() {
		t.Fatalf("filler: %v", err)
	}
	// The cleaner's checkpoint passes the last keyed record.
	checkpoint := func() int64 { return checkpointFile(partDir) }
	for deadline := time.Now().Add(120 * time.Second); checkpoint() <= lastKeyed; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			ents, _ := os.ReadDir(partDir)
			var files []string
			for _, e := range ents {
				info, _ := e.Info()
				files = append(files, fmt.Sprintf("%s %d", e.Name(), info.Size()))
			}
			t.Fatalf("the cleaner's checkpoint is at %d, the last keyed record at %d; files %v\n%s", checkpoint(), lastKeyed, files, itest.LastLines(p.Output(), 10))
		}
	}
	// Exactly the latest record of each key, at its offset: read it all
	// again, counting every record of every key.
	end := itest.EndOffset(t, itest.NewClient(t, p.Addr), topic, 0)
	cl := itest.NewClient(t, p.Addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	count := map[string]int{}
	for last := int64(-1); last < end-1; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			last = r.Offset
			k := string(r.Key)
			if strings.HasPrefix(k, "filler-") {
				return
			}
			count[k]++
			if want := truth[k]; want.offset != r.Offset || want.value != string(r.Value) {
				t.Fatalf("after cleaning: key %s read at %d (%.20q), the latest is at %d (%.20q)", k, r.Offset, r.Value, want.offset, want.value)
			}
		})
	}
	for k, n := range count {
		if n != 1 {
			t.Fatalf("after cleaning: key %s read %d times", k, n)
		}
	}
	if len(count) != len(truth) {
		t.Fatalf("after cleaning: %d keys read, %d in the log before", len(count), len(truth))
	}
	t.Logf("%d kills, %d during a pass; %d keys, each read once at its latest offset (log end %d)", kills, midClean, len(count), end)
	p.Stop(t, syscall.SIGTERM)
}
