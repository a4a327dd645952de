package broker

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
)

// startQuotaBroker starts a broker measuring quotas over 2 samples of 1 s
// (so tests are short), with quota enforcement off when skip (the
// negative controls), and an admin client.
func startQuotaBroker(t *testing.T, skip bool) (*Broker, *kadm.Client) {
	b, cl := startQuotaBrokerClient(t, skip)
	return b, kadm.NewClient(cl)
}

func startQuotaBrokerClient(t *testing.T, skip bool) (*Broker, *kgo.Client) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = t.TempDir(), "127.0.0.1:0", ""
	for k, v := range map[string]string{"quota.window.num": "2", "controller.quota.window.num": "2"} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	b, err := newBroker(Options{Config: cfg}, func(b *Broker) { b.knobs.skipQuotaEnforcement = skip })
	if err != nil {
		t.Fatal(err)
	}
	b.Serve()
	t.Cleanup(func() { b.Close(context.Background()) })
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return b, cl
}

func setQuota(t *testing.T, adm *kadm.Client, entity kadm.ClientQuotaEntity, key string, v float64) {
	t.Helper()
	res, err := adm.AlterClientQuotas(context.Background(), []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: v}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter quota: %v %+v", err, res)
	}
}

func clientIDEntity(id string) kadm.ClientQuotaEntity {
	return kadm.ClientQuotaEntity{{Type: "client-id", Name: &id}}
}

// throttles counts the throttles a kgo client was told of.
type throttles struct{ n, total atomic.Int64 }

func (h *throttles) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.n.Add(1)
	h.total.Add(int64(d))
}

// TestProducerByteRateEnforced: a producer whose client id has
// producer_byte_rate 300 KB/s takes about (1.2 MB - 300 KB) / 300 KB/s =
// 3 s to send 1.2 MB (the first window's worth goes at once), and is told
// of throttles (throttle_time_ms); a producer with another client id on
// the same broker is never throttled. Negative control: with enforcement
// off the same 1.2 MB goes in well under a second.
func TestProducerByteRateEnforced(t *testing.T) {
	for _, skip := range []bool{false, true} {
		b, adm := startQuotaBroker(t, skip)
		if _, err := adm.CreateTopic(context.Background(), 1, 1, nil, "q"); err != nil {
			t.Fatal(err)
		}
		setQuota(t, adm, clientIDEntity("slow"), "producer_byte_rate", 300_000)
		produce := func(clientID string, n int) (time.Duration, *throttles) {
			h := &throttles{}
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID(clientID), kgo.WithHooks(h),
				kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			value := bytes.Repeat([]byte("x"), 8<<10)
			start := time.Now()
			for i := 0; i < n; i++ {
				if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "q", Value: value}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			return time.Since(start), h
		}
		slow, sh := produce("slow", 150) // 1.2 MB
		fast, fh := produce("fast", 150)
		t.Logf("enforcement off=%v: slow %v (%d throttles), fast %v (%d throttles)", skip, slow, sh.n.Load(), fast, fh.n.Load())
		if fh.n.Load() != 0 {
			t.Fatalf("a producer without a quota was throttled %d times", fh.n.Load())
		}
		if skip {
			if slow > time.Second || sh.n.Load() != 0 {
				t.Fatalf("negative control: without enforcement 1.2 MB took %v, %d throttles", slow, sh.n.Load())
			}
			continue
		}
		if slow < 2*time.Second || slow > 6*time.Second || sh.n.Load() == 0 {
			t.Fatalf("1.2 MB at 300 KB/s took %v with %d throttles, want about 3 s", slow, sh.n.Load())
		}
	}
}

// TestConsumerByteRateEnforced: the same for consumer_byte_rate: reading
// 1.2 MB at 300 KB/s takes about 3 s (Fetch max_bytes is lowered to one
// window's worth; a throttled Fetch is answered empty). Negative control:
// enforcement off, well under a second.
func TestConsumerByteRateEnforced(t *testing.T) {
	for _, skip := range []bool{false, true} {
		b, adm := startQuotaBroker(t, skip)
		if _, err := adm.CreateTopic(context.Background(), 1, 1, nil, "q"); err != nil {
			t.Fatal(err)
		}
		pcl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.ProducerBatchMaxBytes(64<<10)) // batches under one quota window
		if err != nil {
			t.Fatal(err)
		}
		value := bytes.Repeat([]byte("y"), 8<<10)
		for i := 0; i < 150; i++ {
			pcl.Produce(context.Background(), &kgo.Record{Topic: "q", Value: value}, nil)
		}
		if err := pcl.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		pcl.Close()
		setQuota(t, adm, clientIDEntity("slowc"), "consumer_byte_rate", 300_000)
		h := &throttles{}
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("slowc"), kgo.WithHooks(h),
			kgo.ConsumeTopics("q"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxBytes(64<<10), kgo.FetchMaxPartitionBytes(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		n := 0
		for n < 150 && ctx.Err() == nil {
			n += cl.PollFetches(ctx).NumRecords()
		}
		took := time.Since(start)
		cancel()
		cl.Close()
		t.Logf("enforcement off=%v: 1.2 MB consumed in %v, %d throttles", skip, took, h.n.Load())
		if n < 150 {
			t.Fatalf("consumed %d of 150", n)
		}
		if skip {
			if took > time.Second || h.n.Load() != 0 {
				t.Fatalf("negative control: without enforcement took %v, %d throttles", took, h.n.Load())
			}
			continue
		}
		if took < 2*time.Second || took > 6*time.Second || h.n.Load() == 0 {
			t.Fatalf("1.2 MB at 300 KB/s took %v with %d throttles, want about 3 s", took, h.n.Load())
		}
	}
}

// TestControllerMutationRateEnforced: with controller_mutation_rate 1
// (a bucket of 2 partitions over 2 samples of 1 s), CreateTopics v7 takes
// 2 partitions, a third topic goes through while tokens are left
// (the bucket goes below zero), the next is refused with
// THROTTLING_QUOTA_EXCEEDED and a throttle; DeleteTopics and
// CreatePartitions too. Negative control: enforcement off, all created.
func TestControllerMutationRateEnforced(t *testing.T) {
	for _, skip := range []bool{false, true} {
		b, kcl := startQuotaBrokerClient(t, skip)
		adm := kadm.NewClient(kcl)
		setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "user"}}, "controller_mutation_rate", 1)
		ctx := context.Background()
		create := func(name string, parts int32) error {
			res, err := adm.CreateTopic(ctx, parts, 1, nil, name)
			if err != nil {
				return err
			}
			return res.Err
		}
		errA := create("a", 2) // 2 - 2 = 0 left: accepted
		errB := create("b", 3) // 0 >= 0: accepted, -3
		errC := create("c", 1) // below zero: refused
		t.Logf("enforcement off=%v: %v %v %v", skip, errA, errB, errC)
		if errA != nil || errB != nil {
			t.Fatalf("refused with tokens left: %v %v", errA, errB)
		}
		if skip {
			if errC != nil {
				t.Fatalf("negative control: %v", errC)
			}
			continue
		}
		if !errors.Is(errC, kerr.ThrottlingQuotaExceeded) {
			t.Fatalf("third topic: %v, want THROTTLING_QUOTA_EXCEEDED", errC)
		}
		// kgo waits out the throttle before its next request (KIP-219's
		// client side); a new client, sharing the quota (same user and
		// client id), does not.
		fresh := func() *kgo.Client {
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.Close)
			return cl
		}
		if md, _ := kadm.NewClient(fresh()).ListTopics(ctx, "c"); md.Has("c") {
			t.Fatal("the refused topic exists")
		}
		resp, err := kadm.NewClient(fresh()).DeleteTopics(ctx, "a")
		if err != nil || !errors.Is(resp["a"].Err, kerr.ThrottlingQuotaExceeded) {
			t.Fatalf("delete: %v %+v", err, resp)
		}
		cp, err := kadm.NewClient(fresh()).CreatePartitions(ctx, 1, "b")
		if err != nil || !errors.Is(cp["b"].Err, kerr.ThrottlingQuotaExceeded) {
			t.Fatalf("create partitions: %v %+v", err, cp)
		}
		// The raw answer carries the throttle (-3 tokens at 1/s: about 3 s).
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "d", 1, 1
		req.Topics = append(req.Topics, rt)
		r, err := req.RequestWith(ctx, fresh())
		if err != nil || r.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || r.ThrottleMillis < 1000 || r.ThrottleMillis > 3100 {
			t.Fatalf("create d: %v %+v", err, r)
		}
	}
}

// TestConnectionCreationRateEnforced: an ip entity's
// connection_creation_rate of 2/s over 2 samples admits 2 connections at
// at once; the third and fourth are held, unread, and closed. Negative control:
// enforcement off, all answered.
func TestConnectionCreationRateEnforced(t *testing.T) {
	for _, skip := range []bool{false, true} {
		b, adm := startQuotaBroker(t, skip)
		setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "ip", Name: kmsg.StringPtr("127.0.0.1")}}, "connection_creation_rate", 2)
		// Four connections at once, then see which are answered.
		var conns []net.Conn
		for i := 0; i < 4; i++ {
			nc, err := net.Dial("tcp", b.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			conns = append(conns, nc)
		}
		answered := 0
		for i, nc := range conns {
			req := kmsg.NewPtrApiVersionsRequest()
			frame := append([]byte{0, 0, 0, 0}, 0, 18, 0, 0, 0, 0, 0, byte(i), 0xff, 0xff)
			frame = append(frame, req.AppendTo(nil)...)
			frame[3] = byte(len(frame) - 4)
			nc.Write(frame)
			nc.SetReadDeadline(time.Now().Add(3 * time.Second))
			if _, err := nc.Read(make([]byte, 8)); err == nil {
				answered++
			}
		}
		t.Logf("enforcement off=%v: %d of 4 connections answered", skip, answered)
		if skip && answered != 4 || !skip && answered != 2 {
			t.Fatalf("%d of 4 connections answered", answered)
		}
	}
}
