package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// secureMinibroker is a minibroker source with a PLAINTEXT listener (for
// the test's own clients) and a SASL_SSL one (SCRAM-SHA-512) serving a
// certificate signed by pki's CA, with the SCRAM user mirror.
func secureMinibroker(t *testing.T, pki *srcPKI, opts ...minibrokertest.Option) *minibrokertest.Cluster {
	t.Helper()
	_, keystore := pki.issue("source-broker", false, "localhost", "127.0.0.1")
	a := minibrokertest.Start(t, append([]minibrokertest.Option{
		minibrokertest.Set("listeners", "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"),
		minibrokertest.Set("listener.name.sasl_ssl.sasl.enabled.mechanisms", "SCRAM-SHA-512"),
		minibrokertest.Set("listener.name.sasl_ssl.ssl.keystore.location", keystore),
		minibrokertest.Topic("orders", 2),
	}, opts...)...)
	setScram(t, a, "mirror", srcMirrorPass)
	return a
}

// setScram creates or changes a SCRAM-SHA-512 user on a's PLAINTEXT
// listener.
func setScram(t *testing.T, a *minibrokertest.Cluster, user, pass string) {
	t.Helper()
	altered, err := kadm.NewClient(newClient(t, a.ListenerAddr("PLAINTEXT"))).AlterUserSCRAMs(context.Background(), nil,
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
	pki, other := newSrcPKI(t, "src"), newSrcPKI(t, "other")
	a := secureMinibroker(t, pki)
	prod := idempotentProducer(t, a.ListenerAddr("PLAINTEXT"))
	for p := int32(0); p < 2; p++ {
		produceSerially(t, prod, "orders", p, "first", 50)
	}
	source := []string{a.ListenerAddr("SASL_SSL")}
	cfg := func(pass, ca string) map[string]string {
		return map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
			"sasl.jaas.config": scramJaas("mirror", pass), "ssl.truststore.location": ca}
	}

	var logs syncBuffer
	b := minibrokertest.Start(t, minibrokertest.HTTP(), minibrokertest.Logger(debugLogger(&logs)))
	base := "http://" + b.HTTPAddr() + "/v1/mirrors"
	for _, neg := range []struct {
		name string
		cfg  map[string]string
		want string
	}{
		{"no-credentials", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": pki.CAFile}, "SASL missing"},
		{"wrong-password", cfg("wrong-"+srcMirrorPass, pki.CAFile), "SASL_AUTHENTICATION_FAILED"},
		{"untrusted-ca", cfg(srcMirrorPass, other.CAFile), "certificate signed by unknown authority"},
	} {
		code, raw := adminCall(t, "POST", base, map[string]any{"name": neg.name, "source": source, "source_config": neg.cfg})
		if code == http.StatusOK || !strings.Contains(string(raw), neg.want) {
			t.Fatalf("%s: %d %s, want a refusal with %q", neg.name, code, raw, neg.want)
		}
	}
	if code, raw := adminCall(t, "POST", base, map[string]any{"name": "secure", "source": source,
		"source_config": cfg(srcMirrorPass, pki.CAFile)}); code != http.StatusOK {
		t.Fatalf("create: %d %s", code, raw)
	}
	b.Mirror("secure").Start("orders")
	for p := int32(0); p < 2; p++ {
		produceSerially(t, prod, "orders", p, "second", 50)
	}
	plain := newClient(t, a.ListenerAddr("PLAINTEXT"))
	ends := sourceEnds(t, plain, "orders")
	waitMirror(t, b, "secure", "caught up", caughtUpTo(ends))
	for p, end := range ends {
		assertIdentical(t, a, b, "orders", p, end)
	}
	b.Mirror("secure").Stop()
	for p, end := range ends {
		if got := barriers(t, b, "orders", p); len(got) != 1 || got[0] != end {
			t.Fatalf("orders-%d: barriers %v, want one at %d", p, got, end)
		}
		hs, bs := batchesOf(t, b, "orders", p, end, end+1)
		c, _ := batch.ReadControl(bs[0])
		var v batch.MirrorPidResetRecord
		if err := v.ReadFrom(c.Value); err != nil || v.SourceClusterID != a.ClusterID() || !batch.IsBarrier(&hs[0], bs[0]) {
			t.Fatalf("orders-%d: barrier %+v %v", p, v, err)
		}
	}
	produceSerially(t, idempotentProducer(t, b.Addr()), "orders", 0, "b", 3) // writable after the failover

	// A second destination: the source rotates the password, the mirror
	// reconnects (a restart) and is refused.
	c := minibrokertest.Start(t, minibrokertest.HTTP(), minibrokertest.Logger(debugLogger(&logs)))
	if err := c.Broker().Mirrors().CreateWith("rot", source, mirror.CreateOptions{SourceConfig: cfg(srcMirrorPass, pki.CAFile)}); err != nil {
		t.Fatal(err)
	}
	c.Mirror("rot").Start("orders")
	waitMirror(t, c, "rot", "caught up", caughtUpTo(ends))
	const newPass = "rotated-Pa55-41d0"
	setScram(t, a, "mirror", newPass)
	c.Restart()
	for p := int32(0); p < 2; p++ {
		produceSerially(t, prod, "orders", p, "third", 20)
	}
	waitMirror(t, c, "rot", "FAILED", func(st mirror.Status) bool {
		for _, p := range st.Partitions {
			if p.State != mirror.Failed || !strings.Contains(p.Reason, "SASL_AUTHENTICATION_FAILED") {
				return false
			}
		}
		return len(st.Partitions) == 2
	})
	if err := newClient(t, c.Addr(), kgo.RecordRetries(0)).ProduceSync(context.Background(),
		&kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("a FAILED mirrored partition took a produce")
	}
	_, failedJSON := adminCall(t, "GET", "http://"+c.HTTPAddr()+"/v1/mirrors/rot", nil)
	if !strings.Contains(string(failedJSON), "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("describe of the FAILED mirror: %s", failedJSON)
	}
	if code, raw := adminCall(t, "PUT", "http://"+c.HTTPAddr()+"/v1/mirrors/rot/source-config",
		map[string]any{"source_config": cfg(newPass, pki.CAFile)}); code != http.StatusOK {
		t.Fatalf("alter: %d %s", code, raw)
	}
	ends = sourceEnds(t, plain, "orders")
	waitMirror(t, c, "rot", "caught up after the fix", caughtUpTo(ends))
	for p, end := range ends {
		assertIdentical(t, a, c, "orders", p, end)
	}
	assertNoSecret(t, srcMirrorPass, map[string]string{"destination logs": logs.String(), "describe": string(failedJSON)})
	assertNoSecret(t, newPass, map[string]string{"destination logs": logs.String()})
}
