package broker

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/config"
)

// startSeamed starts a serving broker with test seams set.
func startSeamed(t *testing.T, seams func(*Broker)) (*Broker, *kgo.Client) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = t.TempDir(), "127.0.0.1:0", ""
	b, err := newBroker(Options{Config: cfg}, seams)
	if err != nil {
		t.Fatal(err)
	}
	b.Serve()
	t.Cleanup(func() { b.Close(context.Background()) })
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return b, cl
}

func countSegments(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			n++
		}
	}
	return n
}

// An altered segment.bytes reaches the running partition: it rolls at
// the new size without a restart. Negative control: with the apply step
// removed (skipApplyConfigs) the override is stored and described, but
// the partition keeps rolling at 1 GiB, which the test sees.
func TestAlteredSegmentBytesReachesRunningPartition(t *testing.T) {
	for _, skip := range []bool{false, true} {
		b, cl := startSeamed(t, func(b *Broker) { b.knobs.skipApplyConfigs = skip })
		if _, err := b.CreateTopic("seg", 1, nil, [16]byte{}, false); err != nil {
			t.Fatal(err)
		}
		adm := kadm.NewClient(cl)
		v := "16384"
		resp, err := adm.AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "segment.bytes", Value: &v}}, "seg")
		if r, _ := resp.On("seg", nil); err != nil || r.Err != nil {
			t.Fatalf("alter: %v %v", err, r.Err)
		}
		for range 60 {
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "seg", Value: make([]byte, 1000)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		p, _ := b.Partition("seg", 0)
		n := countSegments(t, p.Dir())
		t.Logf("skipApplyConfigs=%v: %d segments after 60 KB at segment.bytes=16384", skip, n)
		if rolled := n >= 3; rolled == skip {
			t.Fatalf("skipApplyConfigs=%v: %d segments", skip, n)
		}
	}
}

// A value outside its rule is refused and stores nothing. Negative
// control: with the check removed (skipValidation) segment.bytes=3000000000
// is stored and described, a value the log can only clamp.
func TestAlterRefusesInvalidValue(t *testing.T) {
	for _, skip := range []bool{false, true} {
		b, cl := startSeamed(t, func(b *Broker) { b.knobs.skipValidation = skip })
		if _, err := b.CreateTopic("inv", 1, nil, [16]byte{}, false); err != nil {
			t.Fatal(err)
		}
		adm := kadm.NewClient(cl)
		v := "3000000000"
		resp, err := adm.AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "segment.bytes", Value: &v}}, "inv")
		if err != nil {
			t.Fatal(err)
		}
		r, _ := resp.On("inv", nil)
		tp, _ := b.Topic("inv")
		t.Logf("skipValidation=%v: %v %s; stored %v", skip, r.Err, r.ErrMessage, b.configsOf(tp))
		stored := b.configsOf(tp)["segment.bytes"] == v
		if skip != stored || skip == errors.Is(r.Err, kerr.InvalidConfig) {
			t.Fatalf("skipValidation=%v: err %v, stored %v", skip, r.Err, stored)
		}
	}
}

// Alters racing with produces, fetches and retention: every produce is
// acknowledged and read back (run with -race).
func TestAlterConfigsWhileProducing(t *testing.T) {
	b, cl := startSeamed(t, nil)
	if _, err := b.CreateTopic("race", 1, nil, [16]byte{}, false); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	done := make(chan struct{})
	altered := make(chan error, 1)
	go func() {
		defer close(altered)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			seg, ts, flush := "16384", "CreateTime", "1"
			if i%2 == 1 {
				seg, ts, flush = "65536", "LogAppendTime", "9223372036854775807"
			}
			resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
				{Op: kadm.SetConfig, Name: "segment.bytes", Value: &seg},
				{Op: kadm.SetConfig, Name: "message.timestamp.type", Value: &ts},
				{Op: kadm.SetConfig, Name: "flush.messages", Value: &flush},
			}, "race")
			if r, _ := resp.On("race", nil); err != nil || r.Err != nil {
				altered <- errors.Join(err, r.Err)
				return
			}
			b.applyRetention()
		}
	}()
	const n = 300
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "race", Value: make([]byte, 500)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	close(done)
	if err := <-altered; err != nil {
		t.Fatal(err)
	}
	p, _ := b.Partition("race", 0)
	if got := p.Offsets().LogEnd; got != n {
		t.Fatalf("log end %d, want %d", got, n)
	}
	if segs := countSegments(t, p.Dir()); segs < 3 {
		t.Fatalf("%d segments", segs)
	}
}
