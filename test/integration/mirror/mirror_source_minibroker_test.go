package mirror

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// secureMinibroker is a minibroker source with a PLAINTEXT listener (for
// the test's own clients) and a SASL_SSL one (SCRAM-SHA-512) serving a
// certificate signed by pki's CA, with the SCRAM user mirror.
func secureMinibroker(t *testing.T, pki *itest.SrcPKI, opts ...minibrokertest.Option) *minibrokertest.Cluster {
	t.Helper()
	_, keystore := pki.Issue("source-broker", false, "localhost", "127.0.0.1")
	a := minibrokertest.Start(t, append([]minibrokertest.Option{
		minibrokertest.Set("listeners", "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"),
		minibrokertest.Set("listener.name.sasl_ssl.sasl.enabled.mechanisms", "SCRAM-SHA-512"),
		minibrokertest.Set("listener.name.sasl_ssl.ssl.keystore.location", keystore),
		minibrokertest.Topic("orders", 2),
	}, opts...)...)
	setScram(t, a, "mirror", itest.SrcMirrorPass)
	return a
}

// setScram creates or changes a SCRAM-SHA-512 user on a's PLAINTEXT
// listener.
func setScram(t *testing.T, a *minibrokertest.Cluster, user, pass string) {
	t.Helper()
	altered, err := kadm.NewClient(itest.NewClient(t, a.ListenerAddr("PLAINTEXT"))).AlterUserSCRAMs(context.Background(), nil,
		[]kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: pass}})
	if err == nil {
		err = altered.Error()
	}
	if err != nil {
		t.Fatalf("SCRAM user %s: %v", user, err)
	}
}

// TestMirrorSourceMinibrokerSCRAM mirrors a minibroker source that
// requires SASL_SSL with SCRAM-SHA-512 over a CA-signed certificate:
// byte-identical, failover with its barrier. The negative controls (no
// credentials, a wrong password, an untrusted CA) are each refused at
// create with the source's error. Then a password rotated at the source
// sends a second mirror's partitions to FAILED with the source's
// SASL_AUTHENTICATION_FAILED in describe, and `mirror alter` with the
// new password recovers them byte-identical.
func TestMirrorSourceMinibrokerSCRAM(t *testing.T) {
	t.Parallel()
	pki, other := itest.NewSrcPKI(t, "src"), itest.NewSrcPKI(t, "other")
	a := secureMinibroker(t, pki)
	prod := itest.IdempotentProducer(t, a.ListenerAddr("PLAINTEXT"))
	for p := int32(0); p < 2; p++ {
		itest.ProduceSerially(t, prod, "orders", p, "first", 50)
	}
	source := []string{a.ListenerAddr("SASL_SSL")}
	cfg := func(pass, ca string) map[string]string {
		return map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
			"sasl.jaas.config": itest.ScramJaas("mirror", pass), "ssl.truststore.location": ca}
	}

	var logs itest.SyncBuffer
	b := minibrokertest.Start(t, minibrokertest.HTTP(), minibrokertest.Logger(itest.DebugLogger(&logs)))
	base := "http://" + b.HTTPAddr() + "/v1/mirrors"
	for _, neg := range []struct {
		name string
		cfg  map[string]string
		want string
	}{
		{"no-credentials", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": pki.CAFile}, "SASL missing"},
		{"wrong-password", cfg("wrong-"+itest.SrcMirrorPass, pki.CAFile), "SASL_AUTHENTICATION_FAILED"},
		{"untrusted-ca", cfg(itest.SrcMirrorPass, other.CAFile), "certificate signed by unknown authority"},
	} {
		code, raw := itest.AdminCall(t, "POST", base, map[string]any{"name": neg.name, "source": source, "source_config": neg.cfg})
		if code == http.StatusOK || !strings.Contains(string(raw), neg.want) {
			t.Fatalf("%s: %d %s, want a refusal with %q", neg.name, code, raw, neg.want)
		}
	}
	if code, raw := itest.AdminCall(t, "POST", base, map[string]any{"name": "secure", "source": source,
		"source_config": cfg(itest.SrcMirrorPass, pki.CAFile)}); code != http.StatusOK {
		t.Fatalf("create: %d %s", code, raw)
	}
	b.Mirror("secure").Start("orders")
	for p := int32(0); p < 2; p++ {
		itest.ProduceSerially(t, prod, "orders", p, "second", 50)
	}
	plain := itest.NewClient(t, a.ListenerAddr("PLAINTEXT"))
	ends := itest.SourceEnds(t, plain, "orders")
	itest.WaitMirror(t, b, "secure", "caught up", itest.CaughtUpTo(ends))
	for p, end := range ends {
		itest.AssertIdentical(t, a, b, "orders", p, end)
	}
	b.Mirror("secure").Stop()
	for p, end := range ends {
		if got := itest.Barriers(t, b, "orders", p); len(got) != 1 || got[0] != end {
			t.Fatalf("orders-%d: barriers %v, want one at %d", p, got, end)
		}
		hs, bs := itest.BatchesOf(t, b, "orders", p, end, end+1)
		c, _ := batch.ReadControl(bs[0])
		var v batch.MirrorPidResetRecord
		if err := v.ReadFrom(c.Value); err != nil || v.SourceClusterID != a.ClusterID() || !batch.IsBarrier(&hs[0], bs[0]) {
			t.Fatalf("orders-%d: barrier %+v %v", p, v, err)
		}
	}
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "orders", 0, "b", 3) // writable after the failover

	// A second destination: the source rotates the password, the mirror
	// reconnects (a restart) and is refused.
	c := minibrokertest.Start(t, minibrokertest.HTTP(), minibrokertest.Logger(itest.DebugLogger(&logs)))
	if err := c.Broker().Mirrors().CreateWith("rot", source, mirror.CreateOptions{SourceConfig: cfg(itest.SrcMirrorPass, pki.CAFile)}); err != nil {
		t.Fatal(err)
	}
	c.Mirror("rot").Start("orders")
	itest.WaitMirror(t, c, "rot", "caught up", itest.CaughtUpTo(ends))
	const newPass = "rotated-Pa55-41d0"
	setScram(t, a, "mirror", newPass)
	c.Restart()
	for p := int32(0); p < 2; p++ {
		itest.ProduceSerially(t, prod, "orders", p, "third", 20)
	}
	itest.WaitMirror(t, c, "rot", "FAILED", func(st mirror.Status) bool {
		for _, p := range st.Partitions {
			if p.State != mirror.Failed || !strings.Contains(p.Reason, "SASL_AUTHENTICATION_FAILED") {
				return false
			}
		}
		return len(st.Partitions) == 2
	})
	if err := itest.NewClient(t, c.Addr(), kgo.RecordRetries(0)).ProduceSync(context.Background(),
		&kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("a FAILED mirrored partition took a produce")
	}
	_, failedJSON := itest.AdminCall(t, "GET", "http://"+c.HTTPAddr()+"/v1/mirrors/rot", nil)
	if !strings.Contains(string(failedJSON), "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("describe of the FAILED mirror: %s", failedJSON)
	}
	if code, raw := itest.AdminCall(t, "PUT", "http://"+c.HTTPAddr()+"/v1/mirrors/rot/source-config",
		map[string]any{"source_config": cfg(newPass, pki.CAFile)}); code != http.StatusOK {
		t.Fatalf("alter: %d %s", code, raw)
	}
	ends = itest.SourceEnds(t, plain, "orders")
	itest.WaitMirror(t, c, "rot", "caught up after the fix", itest.CaughtUpTo(ends))
	for p, end := range ends {
		itest.AssertIdentical(t, a, c, "orders", p, end)
	}
	itest.AssertNoSecret(t, itest.SrcMirrorPass, map[string]string{"destination logs": logs.String(), "describe": string(failedJSON)})
	itest.AssertNoSecret(t, newPass, map[string]string{"destination logs": logs.String()})
}
