package integration

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minibroker/minibroker/internal/security/certtest"
	"github.com/minibroker/minibroker/minibrokertest"
)

// Security benchmarks (`make bench` runs them; test/bench renders them):
// 10 KiB records produced and consumed over SASL_SSL (SCRAM-SHA-512, TLS)
// and over PLAINTEXT, against the same broker in the same run, reported
// with their ratio; and SCRAM-SHA-512 connection set-ups per second (TLS
// handshake, SaslHandshake, two SaslAuthenticate steps, one ApiVersions).
// MINIBROKER_BENCH_SECURITY_MB sets the data moved per listener (default
// 64 MiB).

func securityBenchEnv(b *testing.B) (*minibrokertest.Cluster, *certtest.CA) {
	ca := certtest.NewCA(b, "bench-ca")
	ks := certtest.WriteFile(b, b.TempDir(), "broker.pem", ca.Server(b, "broker").Keystore())
	c := minibrokertest.Start(b,
		minibrokertest.Set("listeners", "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"),
		minibrokertest.Set("listener.name.sasl_ssl.sasl.enabled.mechanisms", "SCRAM-SHA-512"),
		minibrokertest.Set("ssl.keystore.location", ks))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenerAddr("PLAINTEXT")))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bench", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bench-secret"}}); err != nil {
		b.Fatal(err)
	}
	return c, ca
}

func securityBenchMB() int { return envInt("MINIBROKER_BENCH_SECURITY_MB", 64) }

// BenchmarkSecurityThroughput: produce then consume 10 KiB records, on
// PLAINTEXT and on SASL_SSL, MB/s each and SASL_SSL / PLAINTEXT.
func BenchmarkSecurityThroughput(b *testing.B) {
	c, ca := securityBenchEnv(b)
	const size = 10 << 10
	n := securityBenchMB() << 20 / size
	value := make([]byte, size)
	for i := range value {
		value[i] = byte(i * 7)
	}
	run := func(name string, opts ...kgo.Opt) (produceMBs, consumeMBs float64) {
		addr := c.ListenerAddr("PLAINTEXT")
		if name == "SASL_SSL" {
			addr = c.ListenerAddr("SASL_SSL")
		}
		topic := "bench-" + name + "-" + strconv.Itoa(b.N)
		p, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
			kgo.ProducerLinger(time.Millisecond)}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := p.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := produceAll(ctx, p, n-1, value); err != nil {
			b.Fatal(err)
		}
		produceMBs = float64(n*size) / (1 << 20) / time.Since(start).Seconds()
		cons, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(16 << 20)}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		defer cons.Close()
		start = time.Now()
		for got := 0; got < n; {
			fs := cons.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				b.Fatal(err)
			}
			got += fs.NumRecords()
		}
		consumeMBs = float64(n*size) / (1 << 20) / time.Since(start).Seconds()
		return produceMBs, consumeMBs
	}
	secure := []kgo.Opt{kgo.DialTLSConfig(ca.ClientTLS(b, nil)), kgo.SASL(scram.Auth{User: "bench", Pass: "bench-secret"}.AsSha512Mechanism())}
	b.ResetTimer()
	var pp, pc, sp, sc float64
	for i := 0; i < b.N; i++ {
		// Alternate the order so neither listener always runs on a warm cache.
		if i%2 == 0 {
			pp, pc = run("PLAINTEXT")
			sp, sc = run("SASL_SSL", secure...)
		} else {
			sp, sc = run("SASL_SSL", secure...)
			pp, pc = run("PLAINTEXT")
		}
	}
	b.ReportMetric(pp, "plaintext-produce-MB/s")
	b.ReportMetric(sp, "sasl_ssl-produce-MB/s")
	b.ReportMetric(sp/pp, "produce-ratio")
	b.ReportMetric(pc, "plaintext-consume-MB/s")
	b.ReportMetric(sc, "sasl_ssl-consume-MB/s")
	b.ReportMetric(sc/pc, "consume-ratio")
}

// BenchmarkSCRAMConnect: SCRAM-SHA-512 connection set-ups over TLS per
// second, scramConnections one after another per iteration (a client's
// first request completes each).
func BenchmarkSCRAMConnect(b *testing.B) {
	c, ca := securityBenchEnv(b)
	tlsCfg := ca.ClientTLS(b, nil)
	addr := c.ListenerAddr("SASL_SSL")
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N*scramConnections; i++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg),
			kgo.SASL(scram.Auth{User: "bench", Pass: "bench-secret"}.AsSha512Mechanism()))
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = cl.Ping(ctx)
		cancel()
		cl.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*scramConnections)/time.Since(start).Seconds(), "setups/s")
}

const scramConnections = 100
