package mirror

import (
	"bytes"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/security/certtest"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorSourceMTLSKeyForms: a source that requires a client
// certificate (mTLS) is mirrored with the client key in each of Kafka's
// PEM forms the broker's listeners take (KIP-651, same loader): a keystore
// file whose PKCS#8 key is encrypted, with ssl.key.password; and inline
// ssl.keystore.key / ssl.keystore.certificate.chain with
// ssl.truststore.certificates. Each catches up byte for byte. The key
// password and the inline PEM show nowhere (describe, list, __mirror_state,
// the debug log: [hidden]). Negative controls: a wrong or missing
// ssl.key.password, an inline key of another certificate and no client
// certificate at all are refused.
func TestMirrorSourceMTLSKeyForms(t *testing.T) {
	t.Parallel()
	ca := certtest.NewCA(t, "src-ca")
	srv := ca.Server(t, "source")
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("kfake-mtls"), kfake.SeedTopics(1, "encrypted", "inline"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{srv.TLSCertificate(t)}, MinVersion: tls.VersionTLS12,
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	adminLeaf := ca.Client(t, "admin", "ops", "acme")
	admin := itest.NewClient(t, src.ListenAddrs()[0], kgo.DialTLSConfig(ca.ClientTLS(t, adminLeaf)), kgo.DefaultProduceTopic("encrypted"))
	inlineProducer := itest.NewClient(t, src.ListenAddrs()[0], kgo.DialTLSConfig(ca.ClientTLS(t, adminLeaf)), kgo.DefaultProduceTopic("inline"))
	itest.ProduceN(t, admin, "first", 100)
	itest.ProduceN(t, inlineProducer, "first", 50)

	dir := t.TempDir()
	const keyPassword = "k3y-Pa55-unique-91c"
	client := ca.Client(t, "mirror", "ops", "acme")
	encrypted := certtest.WriteFile(t, dir, "encrypted.pem", append(client.EncryptedKeyPEM(t, keyPassword), client.CertPEM...))
	inlineKey := string(client.KeyPEM)
	keyBody := strings.Split(strings.TrimSpace(inlineKey), "\n")[1] // a line of the key's base64, to look for

	var logs itest.SyncBuffer
	b := minibrokertest.Start(t, minibrokertest.HTTP(), minibrokertest.Logger(itest.DebugLogger(&logs)))
	base := "http://" + b.HTTPAddr() + "/v1/mirrors"
	good := map[string]map[string]string{
		"encrypted": {"security.protocol": "SSL", "ssl.truststore.location": certtest.WriteFile(t, dir, "ca.pem", ca.PEM),
			"ssl.keystore.location": encrypted, "ssl.key.password": keyPassword},
		"inline": {"security.protocol": "SSL", "ssl.keystore.type": "PEM", "ssl.truststore.type": "PEM",
			"ssl.keystore.key": inlineKey, "ssl.keystore.certificate.chain": string(client.CertPEM),
			"ssl.truststore.certificates": string(ca.PEM)},
	}
	other := ca.Client(t, "other", "ops", "acme")
	refused := map[string]map[string]string{
		"wrong-password": {"security.protocol": "SSL", "ssl.truststore.certificates": string(ca.PEM),
			"ssl.keystore.location": encrypted, "ssl.key.password": "wrong-" + keyPassword},
		"no-password": {"security.protocol": "SSL", "ssl.truststore.certificates": string(ca.PEM), "ssl.keystore.location": encrypted},
		"mismatched-key": {"security.protocol": "SSL", "ssl.truststore.certificates": string(ca.PEM),
			"ssl.keystore.key": string(other.KeyPEM), "ssl.keystore.certificate.chain": string(client.CertPEM)},
	}
	for name, cfg := range refused {
		code, raw := itest.AdminCall(t, "POST", base, map[string]any{"name": name, "source": src.ListenAddrs(), "source_config": cfg})
		if code != http.StatusBadRequest {
			t.Fatalf("%s: create answered %d %s, want 400", name, code, raw)
		}
		if bytes.Contains(raw, []byte(keyPassword)) || bytes.Contains(raw, []byte(keyBody)) {
			t.Fatalf("%s: the refusal shows a secret: %s", name, raw)
		}
	}
	// No client certificate: accepted as settings, refused by the source.
	code, raw := itest.AdminCall(t, "POST", base, map[string]any{"name": "no-cert", "source": src.ListenAddrs(),
		"source_config": map[string]string{"security.protocol": "SSL", "ssl.truststore.certificates": string(ca.PEM)}})
	if code == http.StatusOK {
		code, raw = itest.AdminCall(t, "POST", base+"/no-cert/start", map[string]any{"topics": []string{"encrypted"}})
	}
	if code == http.StatusOK || !strings.Contains(string(raw), "certificate required") {
		t.Fatalf("no client certificate: %d %s, want the source's refusal", code, raw)
	}

	itest.ProduceN(t, admin, "second", 100)
	itest.ProduceN(t, inlineProducer, "second", 50)
	for name, cfg := range good {
		topic := name
		ends := itest.SourceEnds(t, admin, topic)
		if code, raw := itest.AdminCall(t, "POST", base, map[string]any{"name": name, "source": src.ListenAddrs(), "source_config": cfg}); code != http.StatusOK {
			t.Fatalf("%s: create: %d %s", name, code, raw)
		}
		if code, raw := itest.AdminCall(t, "POST", base+"/"+name+"/start", map[string]any{"topics": []string{topic}}); code != http.StatusOK {
			t.Fatalf("%s: start: %d %s", name, code, raw)
		}
		st := itest.WaitMirror(t, b, name, "caught up", itest.CaughtUpTo(ends))
		for p, end := range ends {
			if got, want := itest.RawLog(t, b, topic, p, 0, end), itest.SourceRawLog(t, admin, topic, p, end); !bytes.Equal(got, want) || end < 100 {
				t.Fatalf("%s: %s-%d (end %d) differs from the source", name, topic, p, end)
			}
		}
		for _, k := range []string{"ssl.key.password", "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates"} {
			if v, ok := st.SourceConfig[k]; ok && v != mirror.Hidden {
				t.Fatalf("%s: describe shows %s", name, k)
			}
		}
		_, described := itest.AdminCall(t, "GET", base+"/"+name, nil)
		if !strings.Contains(string(described), `[hidden]`) {
			t.Fatalf("%s: describe JSON hides nothing: %s", name, described)
		}
	}
	_, listed := itest.AdminCall(t, "GET", base, nil)
	stateFile := mirrorStateSegments(t, b.DataDir())
	for _, secret := range []string{keyPassword, keyBody} {
		itest.AssertNoSecret(t, secret, map[string]string{"list JSON": string(listed), "__mirror_state": string(stateFile), "broker log": logs.String()})
	}
}
