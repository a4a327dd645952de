package security

import (
	"context"
	"crypto/tls"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xscram "github.com/xdg-go/scram"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/security/certtest"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestSASLPlain: PLAIN users from the listener's JAAS produce; the
// principal names the admin log; a wrong password answers
// SASL_AUTHENTICATION_FAILED with Kafka's message, is counted and logged
// with the peer address and never the password; a client without
// credentials is refused.
func TestSASLPlain(t *testing.T) {
	ca := certtest.NewCA(t, "ca")
	c, logs := itest.SaslBroker(t, ca)
	addr := c.ListenerAddr("SASL_PLAINTEXT")

	alice := itest.NewClient(t, addr, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.AllowAutoTopicCreation())
	if err := itest.ProduceOne(t, alice, "plain-topic"); err != nil {
		t.Fatalf("alice: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(alice).CreateTopic(ctx, 1, 1, nil, "alice-made"); err != nil {
		t.Fatal(err)
	}
	if got := logs.FilterMessage("admin request").FilterField(zap.String("principal", "User:alice")).Len(); got != 1 {
		t.Fatalf("admin log with User:alice: %d", got)
	}

	wrong := itest.NewClient(t, addr, kgo.SASL(plain.Auth{User: "alice", Pass: "not-her-password"}.AsMechanism()))
	if err := itest.ProduceWithin(wrong, "plain-topic", 2*time.Second); err == nil {
		t.Fatal("wrong password produced")
	}
	code, msg := saslRaw(t, itest.DialRaw(t, addr), "PLAIN", [][]byte{[]byte("\x00alice\x00not-her-password")})
	if code != kerr.SaslAuthenticationFailed.Code || msg != "Authentication failed: Invalid username or password" {
		t.Fatalf("wrong password: %d %q", code, msg)
	}
	// Negative control: no credentials at all.
	none := itest.NewClient(t, addr, kgo.RetryTimeout(time.Second))
	if err := itest.ProduceWithin(none, "plain-topic", 3*time.Second); err == nil {
		t.Fatal("a client without credentials produced")
	}
	fails := logs.FilterMessage("failed authentication").All()
	if len(fails) == 0 || fails[0].ContextMap()["remote"] == "" || fails[0].ContextMap()["mechanism"] != "PLAIN" {
		t.Fatalf("failed authentication log: %+v", fails)
	}
	for _, e := range logs.All() {
		if strings.Contains(e.Message+toString(e.ContextMap()), "not-her-password") ||
			strings.Contains(e.Message+toString(e.ContextMap()), "alice-secret") {
			t.Fatalf("a password in the log: %+v", e)
		}
	}
	if v := itest.SaslMetric(t, c.HTTPAddr(), `minibroker_failed_authentication_total{listener="SASL_PLAINTEXT",mechanism="PLAIN"}`); v == "" || v == "0" {
		t.Fatalf("failed authentications metric: %q", v)
	}
}

// saslRaw handshakes mechanism and sends msgs as SaslAuthenticate v1;
// it returns the first error code and message, and checks the
// connection is then closed.
func saslRaw(t *testing.T, c *itest.RawConn, mechanism string, msgs [][]byte) (int16, string) {
	return saslRawSteps(t, c, mechanism, func(i int, _ []byte) []byte {
		if i < len(msgs) {
			return msgs[i]
		}
		return nil
	})
}

func saslRawSteps(t *testing.T, c *itest.RawConn, mechanism string, next func(i int, challenge []byte) []byte) (int16, string) {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mechanism
	c.Write(itest.RequestFrame(hs, 1))
	hr := kmsg.NewPtrSASLHandshakeResponse()
	hr.Version = 1
	if err := hr.ReadFrom(c.ReadResponse(1, false)); err != nil || hr.ErrorCode != 0 {
		t.Fatalf("handshake: %+v %v", hr, err)
	}
	var challenge []byte
	for i := 0; i < 3; i++ {
		msg := next(i, challenge)
		if msg == nil {
			break
		}
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.Version, au.SASLAuthBytes = 1, msg
		c.Write(itest.RequestFrame(au, int32(10+i)))
		ar := kmsg.NewPtrSASLAuthenticateResponse()
		ar.Version = 1
		if err := ar.ReadFrom(c.ReadResponse(int32(10+i), false)); err != nil {
			t.Fatal(err)
		}
		if ar.ErrorCode != 0 {
			c.ExpectClosed()
			m := ""
			if ar.ErrorMessage != nil {
				m = *ar.ErrorMessage
			}
			return ar.ErrorCode, m
		}
		challenge = ar.SASLAuthBytes
	}
	return 0, ""
}

func toString(m map[string]any) string {
	var b strings.Builder
	for k, v := range m {
		b.WriteString(k + "=" + strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(strings.TrimSpace(fmtAny(v)), "\n", " "), "\t", " ")) + " ")
	}
	return b.String()
}

func fmtAny(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

// TestSASLSCRAMOverTLS: a SCRAM-SHA-512 credential created with kadm
// (AlterUserScramCredentials) on the PLAINTEXT listener authenticates on
// SASL_SSL at once, is described by kadm, survives a restart (stored
// salted and hashed, mode 0600, without the password) and a wrong password
// is refused with Kafka's message.
func TestSASLSCRAMOverTLS(t *testing.T) {
	ca := certtest.NewCA(t, "ca")
	c, _ := itest.SaslBroker(t, ca)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kadm.NewClient(itest.NewClient(t, c.ListenerAddr("PLAINTEXT")))
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-secret"}}); err != nil {
		t.Fatal(err)
	}
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil || len(described["carol"].CredInfos) != 1 || described["carol"].CredInfos[0].Mechanism != kadm.ScramSha512 {
		t.Fatalf("describe: %+v %v", described, err)
	}
	scramClient := func(pass string, opts ...kgo.Opt) *kgo.Client {
		return itest.NewClient(t, c.ListenerAddr("SASL_SSL"), append([]kgo.Opt{kgo.DialTLSConfig(ca.ClientTLS(t, nil)),
			kgo.SASL(scram.Auth{User: "carol", Pass: pass}.AsSha512Mechanism()), kgo.AllowAutoTopicCreation()}, opts...)...)
	}
	if err := itest.ProduceOne(t, scramClient("carol-secret"), "scram-topic"); err != nil {
		t.Fatalf("SCRAM-SHA-512 over TLS: %v", err)
	}
	if err := itest.ProduceWithin(scramClient("wrong"), "scram-topic", 2*time.Second); err == nil {
		t.Fatal("wrong SCRAM password produced")
	}
	rc := itest.DialRaw(t, c.ListenerAddr("SASL_SSL"))
	rc.Nc = tls.Client(rc.Nc, ca.ClientTLS(t, nil))
	sc, _ := xscram.SHA512.NewClient("carol", "wrong", "")
	conv := sc.NewConversation()
	first, _ := conv.Step("")
	code, msg := saslRawSteps(t, rc, "SCRAM-SHA-512", func(i int, challenge []byte) []byte {
		if i == 0 {
			return []byte(first)
		}
		next, _ := conv.Step(string(challenge))
		return []byte(next)
	})
	if code != kerr.SaslAuthenticationFailed.Code || msg != "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512" {
		t.Fatalf("wrong SCRAM password: %d %q", code, msg)
	}

	path := filepath.Join(c.DataDir(), "scram-credentials")
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file: %v %v", st, err)
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), "carol-secret") {
		t.Fatal("the password is stored")
	}
	c.Restart()
	if err := itest.ProduceOne(t, scramClient("carol-secret"), "scram-topic"); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

// TestSASLBadInput: a request other than ApiVersions/SaslHandshake before
// authenticating closes the connection; an unknown mechanism answers
// UNSUPPORTED_SASL_MECHANISM with the enabled list and closes; the broker
// serves on.
func TestSASLBadInput(t *testing.T) {
	ca := certtest.NewCA(t, "ca")
	c, _ := itest.SaslBroker(t, ca)
	addr := c.ListenerAddr("SASL_PLAINTEXT")

	raw := itest.DialRaw(t, addr)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	raw.Write(itest.RequestFrame(md, 1))
	raw.ExpectClosed()

	raw = itest.DialRaw(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "GSSAPI"
	raw.Write(itest.RequestFrame(hs, 7))
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = 1
	if err := resp.ReadFrom(raw.ReadResponse(7, false)); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "PLAIN" {
		t.Fatalf("handshake: %+v", resp)
	}
	raw.ExpectClosed()

	// SaslAuthenticate before SaslHandshake: ILLEGAL_SASL_STATE, closed.
	raw = itest.DialRaw(t, addr)
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version = 1
	raw.Write(itest.RequestFrame(au, 9))
	aresp := kmsg.NewPtrSASLAuthenticateResponse()
	aresp.Version = 1
	if err := aresp.ReadFrom(raw.ReadResponse(9, false)); err != nil || aresp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("authenticate first: %+v %v", aresp, err)
	}
	raw.ExpectClosed()

	alice := itest.NewClient(t, addr, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.AllowAutoTopicCreation())
	if err := itest.ProduceOne(t, alice, "after-bad"); err != nil {
		t.Fatal(err)
	}
}

// TestSASLReauthentication: with connections.max.reauth.ms, the session
// lifetime is given to the client (KIP-368), kgo re-authenticates on the
// same connection and keeps producing past several lifetimes.
func TestSASLReauthentication(t *testing.T) {
	ca := certtest.NewCA(t, "ca")
	c, logs := itest.SaslBroker(t, ca, minibrokertest.Set("listener.name.sasl_plaintext.connections.max.reauth.ms", "1000"))
	_ = logs
	cl := itest.NewClient(t, c.ListenerAddr("SASL_PLAINTEXT"), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.AllowAutoTopicCreation())
	for i := 0; i < 5; i++ {
		if err := itest.ProduceOne(t, cl, "reauth"); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		time.Sleep(700 * time.Millisecond)
	}
	if v := itest.SaslMetric(t, c.HTTPAddr(), `minibroker_successful_authentication_total{listener="SASL_PLAINTEXT",mechanism="PLAIN"}`); v == "" || v == "1" {
		t.Fatalf("no re-authentication counted: %q", v)
	}
}

// TestSASLSessionExpiry: a client that does not re-authenticate within
// connections.max.reauth.ms is disconnected at its next request (KIP-368);
// before the session ends, it is served.
func TestSASLSessionExpiry(t *testing.T) {
	ca := certtest.NewCA(t, "ca")
	c, _ := itest.SaslBroker(t, ca, minibrokertest.Set("listener.name.sasl_plaintext.connections.max.reauth.ms", "400"))
	raw := itest.DialRaw(t, c.ListenerAddr("SASL_PLAINTEXT"))
	if code, _ := saslRaw(t, raw, "PLAIN", [][]byte{[]byte("\x00alice\x00alice-secret")}); code != 0 {
		t.Fatalf("authenticate: %d", code)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	raw.Write(itest.RequestFrame(md, 20))
	raw.ReadResponse(20, true)
	time.Sleep(600 * time.Millisecond)
	raw.Write(itest.RequestFrame(md, 21))
	raw.ExpectClosed()
}

// TestStorageAddScram: `minibroker storage add-scram` stores a credential
// before the first start; the broker then authenticates it, and a wrong
// password is still refused.
func TestStorageAddScram(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command(itest.MinibrokerBinary(t), "storage", "add-scram", "--data-dir", dir,
		"SCRAM-SHA-512=[name=dave,password=dave-secret]", "SCRAM-SHA-256=[name=dave,password=dave-256,iterations=8192]").CombinedOutput()
	if err != nil {
		t.Fatalf("add-scram: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "dave-secret") {
		t.Fatalf("password echoed: %s", out)
	}
	ca := certtest.NewCA(t, "ca")
	c, _ := itest.SaslBroker(t, ca, minibrokertest.DataDir(dir))
	cl := itest.NewClient(t, c.ListenerAddr("SASL_SSL"), kgo.DialTLSConfig(ca.ClientTLS(t, nil)), kgo.AllowAutoTopicCreation(),
		kgo.SASL(scram.Auth{User: "dave", Pass: "dave-secret"}.AsSha512Mechanism()))
	if err := itest.ProduceOne(t, cl, "offline-scram"); err != nil {
		t.Fatal(err)
	}
	cl256 := itest.NewClient(t, c.ListenerAddr("SASL_SSL"), kgo.DialTLSConfig(ca.ClientTLS(t, nil)), kgo.AllowAutoTopicCreation(),
		kgo.SASL(scram.Auth{User: "dave", Pass: "dave-256"}.AsSha256Mechanism()))
	if err := itest.ProduceOne(t, cl256, "offline-scram"); err != nil {
		t.Fatal(err)
	}
	bad := itest.NewClient(t, c.ListenerAddr("SASL_SSL"), kgo.DialTLSConfig(ca.ClientTLS(t, nil)),
		kgo.SASL(scram.Auth{User: "dave", Pass: "dave-256"}.AsSha512Mechanism()))
	if err := itest.ProduceWithin(bad, "offline-scram", 2*time.Second); err == nil {
		t.Fatal("the SHA-256 password accepted for SCRAM-SHA-512")
	}
	if out, err := exec.Command(itest.MinibrokerBinary(t), "storage", "add-scram", "--data-dir", t.TempDir(),
		"SCRAM-SHA-512=[name=eve,password=pw,iterations=100]").CombinedOutput(); err == nil {
		t.Fatalf("100 iterations accepted: %s", out)
	}
}
