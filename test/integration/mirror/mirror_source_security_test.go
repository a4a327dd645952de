package mirror

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorSourceSASLSSL mirrors a kfake source that requires SASL_SSL
// with SCRAM-SHA-512 over a certificate signed by a CA the test made:
// the settings go through the admin API by Kafka's client names, the
// mirror is byte-identical, fails over with its barrier, and the password
// shows nowhere: not in describe, list or the admin API's JSON, not in
// __mirror_state, not in the broker's debug log; the settings file is 0600.
func TestMirrorSourceSASLSSL(t *testing.T) {
	t.Parallel()
	pki := itest.NewSrcPKI(t, "src")
	src, admin := itest.SecureKfake(t, pki, "kfake-secure")
	itest.ProduceN(t, admin, "first", 200)

	var logs itest.SyncBuffer
	b := minibrokertest.Start(t, minibrokertest.HTTP(), minibrokertest.Logger(itest.DebugLogger(&logs)))
	base := "http://" + b.HTTPAddr() + "/v1/mirrors"
	cfg := map[string]string{
		"security.protocol":       "SASL_SSL",
		"sasl.mechanism":          "SCRAM-SHA-512",
		"sasl.jaas.config":        itest.ScramJaas("mirror", itest.SrcMirrorPass),
		"ssl.truststore.location": pki.CAFile,
	}
	if code, raw := itest.AdminCall(t, "POST", base, map[string]any{"name": "secure", "source": src.ListenAddrs(), "source_config": cfg}); code != http.StatusOK {
		t.Fatalf("create: %d %s", code, raw)
	}
	if code, raw := itest.AdminCall(t, "POST", base+"/secure/start", map[string]any{"topics": []string{"orders"}}); code != http.StatusOK {
		t.Fatalf("start: %d %s", code, raw)
	}
	itest.ProduceN(t, admin, "second", 200)
	ends := itest.SourceEnds(t, admin, "orders")
	st := itest.WaitMirror(t, b, "secure", "caught up", itest.CaughtUpTo(ends))
	for p, end := range ends {
		want := itest.SourceRawLog(t, admin, "orders", p, end)
		got := itest.RawLog(t, b, "orders", p, 0, end)
		if !bytes.Equal(got, want) {
			t.Fatalf("orders-%d: mirrored %d bytes differ from the source's %d", p, len(got), len(want))
		}
	}
	if st.SourceConfig["sasl.jaas.config"] != mirror.Hidden || st.SourceConfig["security.protocol"] != "SASL_SSL" {
		t.Fatalf("describe's source config: %v", st.SourceConfig)
	}

	_, described := itest.AdminCall(t, "GET", base+"/secure", nil)
	_, listed := itest.AdminCall(t, "GET", base, nil)
	stateFile := mirrorStateSegments(t, b.DataDir())
	if !strings.Contains(string(stateFile), `"name":"secure"`) {
		t.Fatal("__mirror_state does not hold the mirror")
	}
	if !strings.Contains(string(described), `"sasl.jaas.config":"[hidden]"`) {
		t.Fatalf("describe JSON: %s", described)
	}
	fi, err := os.Stat(filepath.Join(b.DataDir(), "mirror-sources.log"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mirror-sources.log: %v %v, want mode 0600", fi.Mode(), err)
	}
	secrets, _ := os.ReadFile(filepath.Join(b.DataDir(), "mirror-sources.log"))
	if !strings.Contains(string(secrets), itest.SrcMirrorPass) {
		t.Fatal("mirror-sources.log does not hold the settings")
	}

	// Failover: the barrier ends every partition and names the source.
	b.Mirror("secure").Stop()
	for p := range ends {
		hs, bs := itest.BatchesOf(t, b, "orders", p, 0, itest.LogEnd(b, "orders", p))
		last := len(hs) - 1
		if !batch.IsBarrier(&hs[last], bs[last]) || hs[last].BaseOffset != ends[p] {
			t.Fatalf("orders-%d: no barrier at %d", p, ends[p])
		}
		c, _ := batch.ReadControl(bs[last])
		var v batch.MirrorPidResetRecord
		if err := v.ReadFrom(c.Value); err != nil || v.SourceClusterID != "kfake-secure" {
			t.Fatalf("barrier value %+v %v", v, err)
		}
	}
	_, stopped := itest.AdminCall(t, "GET", base+"/secure", nil)
	itest.AssertNoSecret(t, itest.SrcMirrorPass, map[string]string{"describe JSON": string(described), "list JSON": string(listed),
		"describe after stop": string(stopped), "__mirror_state": string(stateFile), "broker log": logs.String()})

	// Deleting the mirror deletes its secrets.
	if code, raw := itest.AdminCall(t, "DELETE", base+"/secure", nil); code != http.StatusOK {
		t.Fatalf("delete: %d %s", code, raw)
	}
	secrets, _ = os.ReadFile(filepath.Join(b.DataDir(), "mirror-sources.log"))
	itest.AssertNoSecret(t, itest.SrcMirrorPass, map[string]string{"mirror-sources.log after delete": string(secrets)})
}

// TestMirrorSourceRotatedPasswordRecovers: the source rotates the
// mirror's password; when the mirror reconnects (here, after a restart of
// the destination, which also reloads the settings from disk) it stops
// getting data, its partitions stay read-only, and it resumes from where
// it was once the source config is fixed through the admin API. kfake
// closes the connection on a wrong password instead of answering
// SASL_AUTHENTICATION_FAILED as Kafka does, so here the mirror cannot
// tell it from a network error and retries (describe shows the error);
// against a minibroker source the partitions go FAILED
// (TestMirrorSourceMinibrokerSCRAM).
func TestMirrorSourceRotatedPasswordRecovers(t *testing.T) {
	t.Parallel()
	pki := itest.NewSrcPKI(t, "src")
	src, admin := itest.SecureKfake(t, pki, "kfake-rotating")
	itest.ProduceN(t, admin, "first", 100)

	var logs itest.SyncBuffer
	b := minibrokertest.Start(t, minibrokertest.HTTP(), minibrokertest.Logger(itest.DebugLogger(&logs)))
	cfg := func(pass string) map[string]string {
		return map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
			"sasl.jaas.config": itest.ScramJaas("mirror", pass), "ssl.truststore.location": pki.CAFile}
	}
	ms := b.Broker().Mirrors()
	if err := ms.CreateWith("rot", src.ListenAddrs(), mirror.CreateOptions{SourceConfig: cfg(itest.SrcMirrorPass)}); err != nil {
		t.Fatal(err)
	}
	b.Mirror("rot").Start("orders")
	before := itest.SourceEnds(t, admin, "orders")
	itest.WaitMirror(t, b, "rot", "caught up", itest.CaughtUpTo(before))

	const newPass = "rotated-Pa55-9c1e"
	altered, err := kadm.NewClient(admin).AlterUserSCRAMs(context.Background(), nil,
		[]kadm.UpsertSCRAM{{User: "mirror", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: newPass}}) // kfake always announces 4096
	if err == nil {
		err = altered.Error()
	}
	if err != nil {
		t.Fatalf("rotate: %v", err)
	}
	b.Restart()
	itest.ProduceN(t, admin, "second", 100)
	itest.WaitMirror(t, b, "rot", "refused by the source", func(st mirror.Status) bool {
		for _, p := range st.Partitions {
			if p.FetchErrors == 0 || p.LastError == "" {
				return false
			}
		}
		return true
	})
	for p, end := range before {
		if got := itest.LogEnd(b, "orders", p); got != end {
			t.Fatalf("orders-%d: mirrored to %d with a rotated password (was %d)", p, got, end)
		}
	}
	prod := itest.NewClient(t, b.Addr(), kgo.DefaultProduceTopic("orders"), kgo.RecordRetries(0))
	if err := prod.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("a mirrored partition took a produce")
	}

	base := "http://" + b.HTTPAddr() + "/v1/mirrors/rot"
	if code, raw := itest.AdminCall(t, "PUT", base+"/source-config", map[string]any{"source_config": cfg(newPass)}); code != http.StatusOK {
		t.Fatalf("alter: %d %s", code, raw)
	}
	ends := itest.SourceEnds(t, admin, "orders")
	defer func() {
		if t.Failed() {
			t.Log(logs.String()[max(0, len(logs.String())-6000):])
		}
	}()
	itest.WaitMirror(t, b, "rot", "caught up after the fix", itest.CaughtUpTo(ends))
	for p, end := range ends {
		if got, want := itest.RawLog(t, b, "orders", p, 0, end), itest.SourceRawLog(t, admin, "orders", p, end); !bytes.Equal(got, want) {
			t.Fatalf("orders-%d differs from the source after recovery", p)
		}
	}
	_, described := itest.AdminCall(t, "GET", base, nil)
	itest.AssertNoSecret(t, newPass, map[string]string{"describe JSON": string(described), "broker log": logs.String()})
	itest.AssertNoSecret(t, itest.SrcMirrorPass, map[string]string{"broker log": logs.String()})
}

// TestMirrorSourceSecurityRefused: the negative controls. The same mirror
// with no credentials, a wrong password, an untrusted CA (also with the
// host name check off, which must still verify the chain), a certificate
// for another host, PLAINTEXT against TLS, and no client certificate where
// the source requires one, is refused at start with the source's or the
// TLS layer's error; the right settings start (positive controls, same
// sources).
func TestMirrorSourceSecurityRefused(t *testing.T) {
	t.Parallel()
	pki, other := itest.NewSrcPKI(t, "src"), itest.NewSrcPKI(t, "other")
	sasl, _ := itest.SecureKfake(t, pki, "kfake-sasl")
	wrongHost, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "hosts"),
		kfake.TLS(pki.ServerTLS(false, "other.example")))
	if err != nil {
		t.Fatal(err)
	}
	defer wrongHost.Close()
	mtls, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "certs"),
		kfake.TLS(pki.ServerTLS(true, "localhost", "127.0.0.1")))
	if err != nil {
		t.Fatal(err)
	}
	defer mtls.Close()
	_, clientKeystore := pki.Issue("mirror-client", true)

	b := minibrokertest.Start(t)
	ms := b.Broker().Mirrors()
	saslCfg := func(pass, ca string) map[string]string {
		return map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
			"sasl.jaas.config": itest.ScramJaas("mirror", pass), "ssl.truststore.location": ca}
	}
	with := func(cfg map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for kk, vv := range cfg {
			if kk != k {
				out[kk] = vv
			}
		}
		return out
	}
	cases := []struct {
		name   string
		source []string
		topic  string
		cfg    map[string]string
		want   string // "" = starts
	}{
		{"sasl-ok", sasl.ListenAddrs(), "orders", saslCfg(itest.SrcMirrorPass, pki.CAFile), ""},
		{"sasl-no-credentials", sasl.ListenAddrs(), "orders", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": pki.CAFile}, "SASL missing"},
		{"sasl-wrong-password", sasl.ListenAddrs(), "orders", saslCfg("wrong-"+itest.SrcMirrorPass, pki.CAFile), "EOF"},
		{"sasl-untrusted-ca", sasl.ListenAddrs(), "orders", saslCfg(itest.SrcMirrorPass, other.CAFile), "certificate signed by unknown authority"},
		{"sasl-untrusted-ca-no-hostname-check", sasl.ListenAddrs(), "orders",
			with(saslCfg(itest.SrcMirrorPass, other.CAFile), "ssl.endpoint.identification.algorithm", ""), "certificate signed by unknown authority"},
		{"sasl-plaintext-to-tls", sasl.ListenAddrs(), "orders", nil, "TLS missing"},
		{"host-checked", wrongHost.ListenAddrs(), "hosts", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": pki.CAFile},
			"cannot validate certificate for 127.0.0.1"},
		{"host-not-checked", wrongHost.ListenAddrs(), "hosts", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": pki.CAFile,
			"ssl.endpoint.identification.algorithm": ""}, ""},
		{"mtls-no-keystore", mtls.ListenAddrs(), "certs", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": pki.CAFile},
			"certificate required"},
		{"mtls-ok", mtls.ListenAddrs(), "certs", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": pki.CAFile,
			"ssl.keystore.location": clientKeystore}, ""},
	}
	for _, c := range cases {
		if err := ms.CreateWith(c.name, c.source, mirror.CreateOptions{SourceConfig: c.cfg}); err != nil {
			t.Fatalf("%s: create: %v", c.name, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := ms.Start(ctx, c.name, []string{c.topic})
		cancel()
		switch {
		case c.want == "" && err != nil:
			t.Fatalf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Fatalf("%s: %v, want an error with %q", c.name, err, c.want)
		case c.want == "":
			b.Mirror(c.name).Stop()
		}
		if err != nil && strings.Contains(err.Error(), itest.SrcMirrorPass) {
			t.Fatalf("%s: the error shows the password", c.name)
		}
	}
}

// TestMirrorSourceRefusedFailsAndRecovers: a mirror whose source settings
// stop being accepted (here an alter to a truststore of another CA, as
// when the source's certificate is renewed from a CA the mirror does not
// trust) goes FAILED with the TLS error in describe, stays read-only, and
// recovers from its local log end once the settings are fixed.
func TestMirrorSourceRefusedFailsAndRecovers(t *testing.T) {
	t.Parallel()
	pki, other := itest.NewSrcPKI(t, "src"), itest.NewSrcPKI(t, "other")
	src, admin := itest.SecureKfake(t, pki, "kfake-refused")
	itest.ProduceN(t, admin, "first", 100)
	b := minibrokertest.Start(t, minibrokertest.HTTP())
	cfg := func(ca string) map[string]string {
		return map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
			"sasl.jaas.config": itest.ScramJaas("mirror", itest.SrcMirrorPass), "ssl.truststore.location": ca}
	}
	if err := b.Broker().Mirrors().CreateWith("m", src.ListenAddrs(), mirror.CreateOptions{SourceConfig: cfg(pki.CAFile)}); err != nil {
		t.Fatal(err)
	}
	b.Mirror("m").Start("orders")
	itest.WaitMirror(t, b, "m", "caught up", itest.CaughtUpTo(itest.SourceEnds(t, admin, "orders")))

	base := "http://" + b.HTTPAddr() + "/v1/mirrors/m"
	if code, raw := itest.AdminCall(t, "PUT", base+"/source-config", map[string]any{"source_config": cfg(other.CAFile)}); code != http.StatusOK {
		t.Fatalf("alter: %d %s", code, raw)
	}
	itest.ProduceN(t, admin, "second", 100)
	itest.WaitMirror(t, b, "m", "FAILED", func(st mirror.Status) bool {
		for _, p := range st.Partitions {
			if p.State != mirror.Failed || !strings.Contains(p.Reason, "certificate signed by unknown authority") {
				return false
			}
		}
		return len(st.Partitions) == 2
	})
	prod := itest.NewClient(t, b.Addr(), kgo.DefaultProduceTopic("orders"), kgo.RecordRetries(0))
	if err := prod.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("a FAILED mirrored partition took a produce")
	}
	if code, raw := itest.AdminCall(t, "PUT", base+"/source-config", map[string]any{"source_config": cfg(pki.CAFile)}); code != http.StatusOK {
		t.Fatalf("alter: %d %s", code, raw)
	}
	ends := itest.SourceEnds(t, admin, "orders")
	itest.WaitMirror(t, b, "m", "caught up after the fix", itest.CaughtUpTo(ends))
	for p, end := range ends {
		if got, want := itest.RawLog(t, b, "orders", p, 0, end), itest.SourceRawLog(t, admin, "orders", p, end); !bytes.Equal(got, want) {
			t.Fatalf("orders-%d differs from the source after recovery", p)
		}
	}
}
