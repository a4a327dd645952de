package mirror

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// The mirror's catch-up and steady-state lag are measured by `make bench`
// with source and destination as processes of their own (section
// mirrorspeed, test/bench/mirror.go).

// BenchmarkFailoverStop1000Partitions: the failover of a mirror of 1,000
// partitions (`mirror stop --all-topics --wait`) until every partition is
// STOPPED with its barrier durable (goal < 500 ms), the median of the
// iterations (-benchtime Nx), and beside it, in the same run and on the
// same disk, its floor: the barrier's durability costs each partition an
// fsync of its segment and, for a segment never fully flushed, of its
// directory; 1,000 of each, 64 at a time as STOPPING runs them
// (fsync-peer-ms). Named without "Mirror" so that `make bench`'s mirror
// section (-bench Mirror) leaves it to its own section.
func BenchmarkFailoverStop1000Partitions(b *testing.B) {
	const parts = 1000
	a := minibrokertest.Start(b, minibrokertest.Topic("wide", parts))
	cl, _ := kgo.NewClient(kgo.SeedBrokers(a.Addr()), kgo.DefaultProduceTopic("wide"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var recs []*kgo.Record
	for i := 0; i < 2*parts; i++ {
		recs = append(recs, &kgo.Record{Value: []byte("v")})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	cl.Close()
	var stops, peers []float64
	for b.Loop() {
		b.StopTimer()
		d := minibrokertest.Start(b)
		m := d.Mirror("m", a.Addr()).Start("wide")
		m.WaitCaughtUp(2 * time.Minute)
		b.StartTimer()
		start := time.Now()
		m.Stop()
		stops = append(stops, float64(time.Since(start).Microseconds())/1000)
		b.StopTimer()
		d.Close()
		peer, err := fsyncPeer(b.TempDir(), parts, 64)
		if err != nil {
			b.Fatal(err)
		}
		peers = append(peers, peer)
		b.StartTimer()
	}
	b.ReportMetric(itest.Median(stops), "ms/failover")
	b.ReportMetric(itest.Median(peers), "fsync-peer-ms")
	b.ReportMetric(itest.Median(stops)/itest.Median(peers), "ratio-to-peer")
}

// fsyncPeer times n new files, each in a directory of its own, written and
// made durable (the file and its directory fsynced), par at a time: what
// n partitions' barriers cost the disk at least. It returns milliseconds.
func fsyncPeer(dir string, n, par int) (float64, error) {
	files := make([]*os.File, n)
	dirs := make([]string, n)
	for i := range n {
		dirs[i] = filepath.Join(dir, fmt.Sprint("p-", i))
		if err := os.Mkdir(dirs[i], 0o755); err != nil {
			return 0, err
		}
		f, err := os.Create(filepath.Join(dirs[i], "00000000000000000000.log"))
		if err != nil {
			return 0, err
		}
		defer f.Close()
		files[i] = f
	}
	barrier := make([]byte, 80) // about a barrier batch's size
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, par)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := files[i].Write(barrier); err != nil {
				errs[i] = err
				return
			}
			if err := files[i].Sync(); err != nil {
				errs[i] = err
				return
			}
			d, err := os.Open(dirs[i])
			if err != nil {
				errs[i] = err
				return
			}
			errs[i] = d.Sync()
			d.Close()
		}()
	}
	wg.Wait()
	ms := float64(time.Since(start).Microseconds()) / 1000
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return ms, nil
}
