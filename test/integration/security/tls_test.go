package security

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/minibroker/minibroker/internal/security/certtest"
	"github.com/minibroker/minibroker/minibrokertest"
)

// tlsBroker starts a broker with a PLAINTEXT and an SSL listener whose
// keystore is a file in a temporary directory (returned), logging to an
// observer.
func tlsBroker(t *testing.T, ca *certtest.CA, extra ...minibrokertest.Option) (*minibrokertest.Cluster, string, *observer.ObservedLogs) {
	t.Helper()
	dir := t.TempDir()
	ks := certtest.WriteFile(t, dir, "broker.pem", ca.Server(t, "broker-1").Keystore())
	core, logs := observer.New(zap.InfoLevel)
	opts := append([]minibrokertest.Option{
		minibrokertest.Logger(zap.New(core)),
		minibrokertest.Set("listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"),
		minibrokertest.Set("listener.name.ssl.ssl.keystore.location", ks),
	}, extra...)
	return minibrokertest.Start(t, opts...), ks, logs
}

// TestTLSListener: a client that trusts the broker's CA produces and
// consumes over SSL; one that trusts another CA is refused (the negative
// control); a plaintext client on the TLS port and a TLS client on the
// plaintext port are closed promptly and the broker serves on.
func TestTLSListener(t *testing.T) {
	ca := certtest.NewCA(t, "test-ca")
	c, _, logs := tlsBroker(t, ca)
	addr := c.ListenerAddr("SSL")

	cl := itest.NewClient(t, addr, kgo.DialTLSConfig(ca.ClientTLS(t, nil)), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics("tls-topic"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := itest.ProduceOne(t, cl, "tls-topic"); err != nil {
		t.Fatalf("produce over TLS: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if fs := cl.PollFetches(ctx); fs.Err() != nil || fs.NumRecords() != 1 {
		t.Fatalf("consume over TLS: %v %d", fs.Err(), fs.NumRecords())
	}
	if logs.FilterMessage("serving certificate").FilterField(zap.String("subject", "CN=broker-1")).Len() != 1 {
		t.Errorf("no log of the certificate served: %v", logs.All())
	}

	// Negative control: a client that does not trust the broker's CA.
	other := certtest.NewCA(t, "other-ca")
	if conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, other.ClientTLS(t, nil)); err == nil {
		conn.Close()
		t.Fatal("a client trusting another CA completed the handshake")
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted: %v", err)
	}
	bad := itest.NewClient(t, addr, kgo.DialTLSConfig(other.ClientTLS(t, nil)), kgo.RetryTimeout(2*time.Second))
	if err := itest.ProduceWithin(bad, "tls-topic", 2*time.Second); err == nil {
		t.Fatal("a client trusting another CA produced")
	}

	// Plaintext on the TLS port: closed at once, not held.
	raw := itest.DialRaw(t, addr)
	raw.Write(itest.RequestFrame(apiVersionsReq(), 1))
	raw.ExpectClosed()
	// TLS on the plaintext port: its ClientHello reads as an absurd size.
	tc := tls.Client(itest.DialRaw(t, c.ListenerAddr("PLAINTEXT")).Nc, ca.ClientTLS(t, nil))
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := tc.Handshake(); err == nil {
		t.Fatal("TLS handshake on the plaintext port succeeded")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("TLS client on the plaintext port left hanging")
	}
	if err := itest.ProduceOne(t, cl, "tls-topic"); err != nil {
		t.Fatalf("TLS client after hostile connections: %v", err)
	}
}

// TestMutualTLS: ssl.client.auth=required refuses a client without a
// certificate and one with a certificate from an untrusted CA; a trusted
// client certificate's subject is the principal (Kafka's default mapping),
// named in the admin-request log.
func TestMutualTLS(t *testing.T) {
	ca := certtest.NewCA(t, "test-ca")
	trust := certtest.WriteFile(t, t.TempDir(), "ca.pem", ca.PEM)
	c, _, logs := tlsBroker(t, ca,
		minibrokertest.Set("listener.name.ssl.ssl.client.auth", "required"),
		minibrokertest.Set("listener.name.ssl.ssl.truststore.location", trust))
	addr := c.ListenerAddr("SSL")

	alice := ca.Client(t, "alice", "eng", "acme")
	cl := itest.NewClient(t, addr, kgo.DialTLSConfig(ca.ClientTLS(t, alice)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "mtls-topic"); err != nil {
		t.Fatalf("mTLS client: %v", err)
	}
	if err := itest.ProduceOne(t, cl, "mtls-topic"); err != nil {
		t.Fatalf("mTLS produce: %v", err)
	}
	got := logs.FilterMessage("admin request").FilterField(zap.String("api", "CreateTopics")).All()
	if len(got) != 1 || got[0].ContextMap()["principal"] != "User:CN=alice,OU=eng,O=acme" || got[0].ContextMap()["listener"] != "SSL" {
		t.Fatalf("admin log: %+v", got)
	}

	// Negative controls: no client certificate; one from another CA.
	for name, cert := range map[string]*certtest.Leaf{"none": nil, "untrusted": certtest.NewCA(t, "evil").Client(t, "mallory", "x", "y")} {
		bad := itest.NewClient(t, addr, kgo.DialTLSConfig(ca.ClientTLS(t, cert)), kgo.RetryTimeout(2*time.Second))
		if err := itest.ProduceWithin(bad, "mtls-topic", 2*time.Second); err == nil {
			t.Errorf("client certificate %s accepted", name)
		}
	}
	// The PLAINTEXT listener's principal is User:ANONYMOUS.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pcl := itest.NewClient(t, c.ListenerAddr("PLAINTEXT"))
	if _, err := kadm.NewClient(pcl).CreateTopic(ctx, 1, 1, nil, "plain-topic"); err != nil {
		t.Fatal(err)
	}
	got = logs.FilterMessage("admin request").FilterField(zap.String("principal", "User:ANONYMOUS")).All()
	if len(got) != 1 || got[0].ContextMap()["listener"] != "PLAINTEXT" {
		t.Fatalf("plaintext admin log: %+v", got)
	}
}

// TestKeystoreReload: a keystore file rewritten with a new certificate is
// served to new connections without a restart, and the change is logged.
func TestKeystoreReload(t *testing.T) {
	ca := certtest.NewCA(t, "test-ca")
	c, ks, logs := tlsBroker(t, ca)
	addr := c.ListenerAddr("SSL")
	served := func() string {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, ca.ClientTLS(t, nil))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := served(); got != "broker-1" {
		t.Fatalf("served %s", got)
	}
	tmp := ks + ".new"
	if err := os.WriteFile(tmp, ca.Server(t, "broker-rotated").Keystore(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, ks); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for served() != "broker-rotated" {
		if time.Now().After(deadline) {
			t.Fatal("the rewritten keystore is not served")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if logs.FilterMessage("keystore changed: serving certificate").FilterField(zap.String("subject", "CN=broker-rotated")).Len() != 1 {
		t.Errorf("reload not logged: %v", logs.All())
	}
}

// TestEncryptedKeystoreKey: ssl.keystore.key inline as an encrypted
// PKCS#8 key with ssl.key.password; a wrong password refuses to start.
func TestEncryptedKeystoreKey(t *testing.T) {
	ca := certtest.NewCA(t, "test-ca")
	leaf := ca.Server(t, "broker-enc")
	enc := string(leaf.EncryptedKeyPEM(t, "key-secret"))
	opts := func(pw string) []minibrokertest.Option {
		return []minibrokertest.Option{
			minibrokertest.Set("listeners", "SSL://127.0.0.1:0"),
			minibrokertest.Set("ssl.keystore.key", enc),
			minibrokertest.Set("ssl.keystore.certificate.chain", string(leaf.CertPEM)),
			minibrokertest.Set("ssl.key.password", pw),
		}
	}
	c := minibrokertest.Start(t, opts("key-secret")...)
	cl := itest.NewClient(t, c.Addr(), kgo.DialTLSConfig(ca.ClientTLS(t, nil)), kgo.AllowAutoTopicCreation())
	if err := itest.ProduceOne(t, cl, "enc"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	_, err := minibrokertest.StartE(t, opts("wrong")...)
	if err == nil || strings.Contains(err.Error(), "wrong\"") || strings.Contains(err.Error(), "key-secret") {
		t.Fatalf("wrong ssl.key.password: %v", err)
	}
	t.Log(err)
}

func apiVersionsReq() *kmsg.ApiVersionsRequest {
	r := kmsg.NewPtrApiVersionsRequest()
	r.Version = 3
	r.ClientSoftwareName, r.ClientSoftwareVersion = "raw", "1"
	return r
}
