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
		b, cl := startSeamed(t, func(b *Broker) { b.skipApplyConfigs = skip })
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
		b, cl := startSeamed(t, func(b *Broker) { b.skipValidation = skip })
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
