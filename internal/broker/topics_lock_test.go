package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/vfs"
)

// slowTopicsFS makes every fsync of topics.json's temp file take at least
// delay more: a slow disk, so that a topics.json write under the
// registry lock shows as a stall, whatever the test machine's disk.
type slowTopicsFS struct {
	vfs.FS
	delay time.Duration
}

func (f slowTopicsFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || filepath.Base(name) != topicsFile+".tmp" {
		return file, err
	}
	return slowSyncFile{file, f.delay}, nil
}

type slowSyncFile struct {
	vfs.File
	delay time.Duration
}

func (f slowSyncFile) Sync() error {
	time.Sleep(f.delay)
	return f.File.Sync()
}

// While 100 topics are created, one CreateTopics request each, on a disk
// whose topics.json fsync takes 50 ms, a producer to another topic is
// served: its p99 latency stays under half the fsync (topics.json is
// written under adminMu, not the registry lock Produce takes). Negative
// control: with the partitions created and topics.json written under the
// registry lock, p99 is at least half the fsync (produces wait
// for the writes).
func TestCreateManyTopicsDoesNotStallProduce(t *testing.T) {
	const (
		topics = 100
		delay  = 50 * time.Millisecond
		bound  = delay / 2
	)
	for _, underLock := range []bool{false, true} {
		name := "outside-registry-lock"
		if underLock {
			name = "negative-control-under-lock"
		}
		t.Run(name, func(t *testing.T) {
			cfg := config.Default()
			cfg.DataDir, cfg.Listen, cfg.HTTPListen = t.TempDir(), "127.0.0.1:0", ""
			b, cl := serveWith(t, Options{Config: cfg, FS: slowTopicsFS{vfs.Default, delay}})
			b.knobs.legacyCreateUnderRegistryLock = underLock
			lat, took := produceLatenciesWhile(t, b, cl, func(admin *kgo.Client) {
				for i := range topics {
					req := kmsg.NewPtrCreateTopicsRequest()
					req.TimeoutMillis = 60000
					rt := kmsg.NewCreateTopicsRequestTopic()
					rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("t%03d", i), 1, 1
					req.Topics = append(req.Topics, rt)
					resp, err := req.RequestWith(context.Background(), admin)
					if err != nil {
						t.Error(err)
						return
					}
					if c := resp.Topics[0].ErrorCode; c != 0 {
						t.Errorf("create %s: %v", rt.Topic, kerr.ErrorForCode(c))
						return
					}
				}
			})
			if t.Failed() {
				return
			}
			if got := len(b.TopicNames()); got != topics+1+4 { // and the four internal topics
				t.Fatalf("%d topics, want %d", got, topics+1+4)
			}
			if len(lat) < 100 {
				t.Fatalf("%d produces during the creation: too few for a p99", len(lat))
			}
			p99 := lat[len(lat)*99/100]
			t.Logf("%s: created %d topics in %v (topics.json fsync +%v); %d produces during it: p50 %v p99 %v max %v",
				name, topics, took.Round(time.Millisecond), delay, len(lat), lat[len(lat)/2], p99, lat[len(lat)-1])
			if underLock {
				if p99 < bound {
					t.Errorf("negative control: p99 produce latency %v under %v: the registry lock did not stall it", p99, bound)
				}
				return
			}
			if p99 >= bound {
				t.Errorf("p99 produce latency %v, want under %v (half a topics.json fsync)", p99, bound)
			}
		})
	}
}

// produceLatenciesWhile creates topic "busy" on b, then produces to it
// one record at a time through cl while change runs on an admin client
// of its own, and returns the produce latencies seen meanwhile, sorted,
// and how long change took.
func produceLatenciesWhile(t *testing.T, b *Broker, cl *kgo.Client, change func(admin *kgo.Client)) ([]time.Duration, time.Duration) {
	t.Helper()
	if got := createTopics(t, cl, false, map[string]int32{"busy": 1}); got["busy"].ErrorCode != 0 {
		t.Fatalf("create busy: %v", kerr.ErrorForCode(got["busy"].ErrorCode))
	}
	produce := func() time.Duration {
		start := time.Now()
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "busy", Value: []byte("x")}).FirstErr(); err != nil {
			t.Error(err)
		}
		return time.Since(start)
	}
	produce() // warm
	var changing atomic.Bool
	changing.Store(true)
	var took time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer changing.Store(false)
		admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
		if err != nil {
			t.Error(err)
			return
		}
		defer admin.Close()
		start := time.Now()
		change(admin)
		took = time.Since(start)
	}()
	var lat []time.Duration
	for changing.Load() {
		lat = append(lat, produce())
	}
	<-done
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, took
}
