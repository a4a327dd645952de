package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/minibroker/minibroker/minibrokertest"
)

// authzBenchRecords is MINIBROKER_BENCH_AUTHZ_RECORDS: 100-byte records
// produced per run (default 1,000,000).
func authzBenchRecords() int {
	if n, err := strconv.Atoi(os.Getenv("MINIBROKER_BENCH_AUTHZ_RECORDS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// BenchmarkAuthorizerProduce: 100-byte records produced (idempotent, the
// kgo default) over SASL_PLAINTEXT as User:alice to a broker with the
// authorizer on and 1,000 ACLs (literal and prefixed; topics, groups,
// transactional ids; alice's WRITE among them) and to one with it off,
// in the same run, alternating, best of two each; reports both rates and
// the ratio on/off (goal: at least 0.95).
func BenchmarkAuthorizerProduce(b *testing.B) {
	on, off := aclBroker(b, true), aclBroker(b, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(on.ListenerAddr("SASL_PLAINTEXT")),
		kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	req := kmsg.NewPtrCreateACLsRequest()
	for i := range 999 {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType = []kmsg.ACLResourceType{kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeTransactionalId}[i%3]
		c.ResourcePatternType = []kmsg.ACLResourcePatternType{kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed}[i%2]
		c.ResourceName = fmt.Sprintf("app-%d-%s", i, "xyz"[:i%4])
		c.Principal, c.Host = fmt.Sprintf("User:u%d", i%37), "*"
		c.Operation, c.PermissionType = kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
	}
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourcePatternType, c.ResourceName = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypePrefixed, "bench"
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
	req.Creations = append(req.Creations, c)
	resp, err := req.RequestWith(ctx, admin)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			b.Fatalf("create ACLs: code %d", r.ErrorCode)
		}
	}
	for _, cl := range []*minibrokertest.Cluster{on, off} {
		a, err := kgo.NewClient(kgo.SeedBrokers(cl.ListenerAddr("SASL_PLAINTEXT")),
			kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := kadm.NewClient(a).CreateTopic(ctx, 1, 1, nil, "bench"); err != nil {
			b.Fatal(err)
		}
		a.Close()
	}
	n := authzBenchRecords()
	value := make([]byte, 100)
	run := func(cl *minibrokertest.Cluster) float64 {
		p, err := kgo.NewClient(kgo.SeedBrokers(cl.ListenerAddr("SASL_PLAINTEXT")), kgo.DefaultProduceTopic("bench"),
			kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.ProducerLinger(time.Millisecond))
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		if err := p.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		errs := make(chan error, 1)
		for range n {
			p.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			})
		}
		if err := p.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		select {
		case err := <-errs:
			b.Fatal(err)
		default:
		}
		return float64(n) / time.Since(start).Seconds()
	}
	var bestOn, bestOff float64
	for i := range b.N * 2 {
		// Alternate which goes first: the later run of a pair meets
		// the earlier one's garbage.
		if i%2 == 0 {
			bestOff = max(bestOff, run(off))
			bestOn = max(bestOn, run(on))
		} else {
			bestOn = max(bestOn, run(on))
			bestOff = max(bestOff, run(off))
		}
	}
	// Every record reached the authorized broker's log.
	for _, cl := range []*minibrokertest.Cluster{on, off} {
		a, err := kgo.NewClient(kgo.SeedBrokers(cl.ListenerAddr("SASL_PLAINTEXT")),
			kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
		if err != nil {
			b.Fatal(err)
		}
		ends, err := kadm.NewClient(a).ListEndOffsets(ctx, "bench")
		a.Close()
		if err != nil {
			b.Fatal(err)
		}
		if o, _ := ends.Lookup("bench", 0); o.Offset != int64(b.N*2*(n+1)) {
			b.Fatalf("end offset %d, want %d", o.Offset, b.N*2*(n+1))
		}
	}
	b.ReportMetric(bestOff, "off-records/s")
	b.ReportMetric(bestOn, "on-records/s")
	b.ReportMetric(bestOn/bestOff, "on/off")
}
