package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// BenchmarkMirrorFailover1000Partitions: `mirror stop` of a topic with
// 1,000 mirrored partitions until all are STOPPED with their barriers
// (goal < 2 s).
func BenchmarkMirrorFailover1000Partitions(b *testing.B) {
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
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		d := minibrokertest.Start(b)
		m := d.Mirror("m", a.Addr()).Start("wide")
		m.WaitCaughtUp(2 * time.Minute)
		b.StartTimer()
		start := time.Now()
		m.Stop()
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/failover")
		b.StopTimer()
		d.Close()
		b.StartTimer()
	}
}

// The mirror's catch-up and steady-state lag are measured by `make bench`
// with source and destination as processes of their own (section
// mirrorspeed, test/bench/mirror.go).
