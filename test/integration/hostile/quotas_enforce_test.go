package hostile

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/minibroker/minibroker/minibrokertest"
)

// kgoThrottles counts the throttles a kgo client was told of.
type kgoThrottles struct{ n, total atomic.Int64 }

func (h *kgoThrottles) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.n.Add(1)
	h.total.Add(int64(d))
}

func alterQuotas(t *testing.T, adm *kadm.Client, entries ...kadm.AlterClientQuotaEntry) {
	t.Helper()
	res, err := adm.AlterClientQuotas(context.Background(), entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("alter %v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
}

// TestClientQuotaPrecedenceEnforced: Kafka's precedence decides which
// quota a kgo producer meets. With a tiny producer_byte_rate on
// client-id=<default> and a large one on user=ANONYMOUS,client-id=app
// (level 1 beats level 8), client id "app" produces 400 KB unthrottled and
// "other" is throttled; once user=<default> gets a tiny quota (level 6,
// above level 8 but below level 1) "app" is still free. The throttles are
// seen by kgo (throttle_time_ms) and in /metrics per sensor.
func TestClientQuotaPrecedenceEnforced(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.HTTP(), minibrokertest.Set("quota.window.num", "2"), minibrokertest.Topic("p", 1))
	adm := itest.KadmClient(t, c.Addr())
	alterQuotas(t, adm,
		itest.QuotaSet(itest.QuotaEntity("client-id", "<default>"), "producer_byte_rate", 50_000.0),
		itest.QuotaSet(itest.QuotaEntity("user", "ANONYMOUS", "client-id", "app"), "producer_byte_rate", 1e9))
	produce := func(clientID string) int64 {
		h := &kgoThrottles{}
		cl := itest.NewClient(t, c.Addr(), kgo.ClientID(clientID), kgo.WithHooks(h), kgo.DefaultProduceTopic("p"),
			kgo.ProducerBatchCompression(kgo.NoCompression()))
		value := bytes.Repeat([]byte("v"), 10_000)
		for range 40 { // 400 KB, or until throttled
			if h.n.Load() > 0 {
				break
			}
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		cl.Close()
		return h.n.Load()
	}
	if n := produce("app"); n != 0 {
		t.Fatalf("client id app (its own quota, level 1) throttled %d times", n)
	}
	if n := produce("other"); n == 0 {
		t.Fatal("client id other (client-id=<default>, 50 KB/s) never throttled")
	}
	alterQuotas(t, adm, itest.QuotaSet(itest.QuotaEntity("user", "<default>"), "producer_byte_rate", 50_000.0))
	if n := produce("app"); n != 0 {
		t.Fatalf("client id app throttled %d times by user=<default>, which its level-1 quota outranks", n)
	}
	// other met client-id=<default>: a sensor per client id, no user.
	series := `minibroker_client_quota_throttle_time_seconds_total{client_id="other",quota_type="Produce",user=""}`
	itest.WaitFor(t, "throttle time in /metrics", func() bool {
		v, _ := strconv.ParseFloat(itest.Metric(t, c.HTTPAddr(), series), 64)
		return v > 0
	})
	if v := itest.Metric(t, c.HTTPAddr(), `minibroker_client_quota_limit{client_id="app",quota_type="Produce",user="ANONYMOUS"}`); v != "1e+09" {
		t.Fatalf("app's sensor limit %q in /metrics, want 1e+09", v)
	}
}

// TestClientQuotaMutesConnection: KIP-219 end to end over a bare TCP
// connection (no client-side wait): a Produce over its
// producer_byte_rate is answered at once with throttle_time_ms, and the
// next request on the connection (ApiVersions) is answered only after
// that throttle; a request on another connection is not delayed.
func TestClientQuotaMutesConnection(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Set("quota.window.num", "2"), minibrokertest.Topic("m", 1))
	alterQuotas(t, itest.KadmClient(t, c.Addr()), itest.QuotaSet(itest.QuotaEntity("user", "<default>"), "producer_byte_rate", 200_000.0))
	conn := itest.DialRaw(t, c.Addr())
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 7, 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "m"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = itest.RecordBatch(bytes.Repeat([]byte("z"), 400_000))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	start := time.Now()
	conn.Write(itest.RequestFrame(req, 1))
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 7
	if err := resp.ReadFrom(conn.ReadResponse(1, false)); err != nil {
		t.Fatal(err)
	}
	answered := time.Since(start)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce: code %d", code)
	}
	// 400 KB over a 1 s window at 200 KB/s: (400 - 200) / 200 × 1 s.
	throttle := time.Duration(resp.ThrottleMillis) * time.Millisecond
	if throttle < 900*time.Millisecond || throttle > 1100*time.Millisecond {
		t.Fatalf("throttle_time_ms %d, want about 1000", resp.ThrottleMillis)
	}
	conn.Write(itest.RequestFrame(kmsg.NewPtrApiVersionsRequest(), 2))
	conn.ReadResponse(2, false)
	next := time.Since(start)
	other := itest.DialRaw(t, c.Addr())
	t0 := time.Now()
	other.Write(itest.RequestFrame(kmsg.NewPtrApiVersionsRequest(), 3))
	other.ReadResponse(3, false)
	t.Logf("produce answered after %v with throttle %v; next request answered after %v; another connection in %v", answered, throttle, next, time.Since(t0))
	if answered > throttle/2 || next < throttle-50*time.Millisecond || time.Since(t0) > throttle/2 {
		t.Fatalf("answered %v, next %v, other connection %v for a %v throttle", answered, next, time.Since(t0), throttle)
	}
}

// TestClientQuotaRequestPercentage: request_percentage throttles a client
// that keeps the broker busy (Metadata requests back to back against 0.5
// % of a thread), not another client id.
func TestClientQuotaRequestPercentage(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Set("quota.window.num", "2"))
	alterQuotas(t, itest.KadmClient(t, c.Addr()), itest.QuotaSet(itest.QuotaEntity("client-id", "busy"), "request_percentage", 0.5))
	busy := func(clientID string) int64 {
		h := &kgoThrottles{}
		cl := itest.NewClient(t, c.Addr(), kgo.ClientID(clientID), kgo.WithHooks(h))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		for ctx.Err() == nil && h.n.Load() == 0 {
			kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		}
		return h.n.Load()
	}
	if n := busy("busy"); n == 0 {
		t.Fatal("a client over 0.5 % request time never throttled in 3 s")
	}
	if n := busy("idle-quota-free"); n != 0 {
		t.Fatalf("a client without a quota throttled %d times", n)
	}
}

// TestClientQuotaMutationPermissive: before CreateTopics v6 (a client
// speaking Kafka 2.6's versions) the controller mutation quota does not
// refuse: the topic is created and the answer throttled, as Kafka's
// permissive quota.
func TestClientQuotaMutationPermissive(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Set("controller.quota.window.num", "2"))
	alterQuotas(t, itest.KadmClient(t, c.Addr()), itest.QuotaSet(itest.QuotaEntity("user", "<default>"), "controller_mutation_rate", 1.0))
	h := &kgoThrottles{}
	old := kadm.NewClient(itest.NewClient(t, c.Addr(), kgo.MaxVersions(kversion.V2_6_0()), kgo.WithHooks(h)))
	for i, parts := range []int32{2, 3, 4} {
		name := "perm-" + strconv.Itoa(i)
		res, err := old.CreateTopic(context.Background(), parts, 1, nil, name)
		if err != nil || res.Err != nil {
			t.Fatalf("create %s with CreateTopics v5: %v %v", name, err, res.Err)
		}
	}
	if h.n.Load() == 0 {
		t.Fatal("9 partitions against a bucket of 2 at 1/s: no throttle in the answers")
	}
	md := itest.KadmMetadata(t, c.Addr())
	for i := range 3 {
		if !md.Topics.Has("perm-" + strconv.Itoa(i)) {
			t.Fatalf("perm-%d missing: %v", i, strings.Join(md.Topics.Names(), ","))
		}
	}
}
