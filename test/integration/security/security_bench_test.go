package security

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

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
// MINIBROKER_BENCH_SECURITY_MB sets the data moved per listener and round
// (default 64 MiB), MINIBROKER_BENCH_SECURITY_ROUNDS the rounds (default
// 5), the order of the listeners alternating between rounds; medians are
// reported. Besides MB/s, each phase's CPU per MB (the test process's
// user+system time: client and broker together, on the same cores) is
// reported, which a loaded machine disturbs less than throughput.

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

func securityBenchMB() int { return itest.EnvInt("MINIBROKER_BENCH_SECURITY_MB", 64) }

// processCPU is the process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// phase is one measured produce or consume: MB/s and CPU ms per MB.
type phase struct{ mbs, cpuPerMB float64 }

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
	mb := float64(n*size) / (1 << 20)
	measure := func(start time.Time, cpu0 time.Duration) phase {
		return phase{mbs: mb / time.Since(start).Seconds(), cpuPerMB: float64((processCPU() - cpu0).Microseconds()) / 1000 / mb}
	}
	round := 0
	run := func(name string, opts ...kgo.Opt) (produce, consume phase) {
		addr := c.ListenerAddr("PLAINTEXT")
		if name == "SASL_SSL" {
			addr = c.ListenerAddr("SASL_SSL")
		}
		round++
		topic := "bench-" + name + "-" + strconv.Itoa(b.N) + "-" + strconv.Itoa(round)
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
		start, cpu0 := time.Now(), processCPU()
		if err := itest.ProduceAll(ctx, p, n-1, value); err != nil {
			b.Fatal(err)
		}
		produce = measure(start, cpu0)
		cons, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(16 << 20)}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		defer cons.Close()
		start, cpu0 = time.Now(), processCPU()
		for got := 0; got < n; {
			fs := cons.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				b.Fatal(err)
			}
			got += fs.NumRecords()
		}
		consume = measure(start, cpu0)
		return produce, consume
	}
	secure := []kgo.Opt{kgo.DialTLSConfig(ca.ClientTLS(b, nil)), kgo.SASL(scram.Auth{User: "bench", Pass: "bench-secret"}.AsSha512Mechanism())}
	b.ResetTimer()
	var pp, pc, sp, sc []phase
	for i := 0; i < b.N; i++ {
		for r := 0; r < itest.EnvInt("MINIBROKER_BENCH_SECURITY_ROUNDS", 5); r++ {
			// Alternate the order so neither listener always runs on a warm cache.
			var p1, c1, p2, c2 phase
			if r%2 == 0 {
				p1, c1 = run("PLAINTEXT")
				p2, c2 = run("SASL_SSL", secure...)
			} else {
				p2, c2 = run("SASL_SSL", secure...)
				p1, c1 = run("PLAINTEXT")
			}
			pp, pc, sp, sc = append(pp, p1), append(pc, c1), append(sp, p2), append(sc, c2)
		}
	}
	med := func(ps []phase, cpu bool) float64 {
		v := make([]float64, len(ps))
		for i, p := range ps {
			v[i] = p.mbs
			if cpu {
				v[i] = p.cpuPerMB
			}
		}
		return itest.Median(v)
	}
	for _, m := range []struct {
		what               string
		plaintext, saslSSL []phase
	}{{"produce", pp, sp}, {"consume", pc, sc}} {
		b.ReportMetric(med(m.plaintext, false), "plaintext-"+m.what+"-MB/s")
		b.ReportMetric(med(m.saslSSL, false), "sasl_ssl-"+m.what+"-MB/s")
		b.ReportMetric(med(m.saslSSL, false)/med(m.plaintext, false), m.what+"-ratio")
		b.ReportMetric(med(m.plaintext, true), "plaintext-"+m.what+"-cpu-ms/MB")
		b.ReportMetric(med(m.saslSSL, true), "sasl_ssl-"+m.what+"-cpu-ms/MB")
		b.ReportMetric(med(m.plaintext, true)/med(m.saslSSL, true), m.what+"-cpu-ratio")
	}
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
