package security

import (
	"encoding/binary"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	xscram "github.com/xdg-go/scram"

	"github.com/minibroker/minibroker/minibrokertest"
)

// This file covers SaslHandshake v0 followed by bare SASL tokens (the
// pre-KIP-152 framing): raw frames, sarama's SASLHandshakeV0, and hostile
// tokens.

// saslV0Broker: a SASL_PLAINTEXT listener with PLAIN (alice) and
// SCRAM-SHA-512 (carol), and a PLAINTEXT one.
func saslV0Broker(t *testing.T) *minibrokertest.Cluster {
	t.Helper()
	c := minibrokertest.Start(t,
		minibrokertest.Set("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"),
		minibrokertest.Set("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"),
		minibrokertest.Set("listener.name.sasl_plaintext.plain.sasl.jaas.config", itest.PlainJAAS))
	adm := kadm.NewClient(itest.NewClient(t, c.ListenerAddr("PLAINTEXT")))
	if _, err := adm.AlterUserSCRAMs(itest.CompatCtx(t), nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-secret"}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// handshakeV0 sends SaslHandshake v0 and checks it is accepted.
func handshakeV0(t *testing.T, raw *itest.RawConn, mechanism string) {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 0, mechanism
	raw.Write(itest.RequestFrame(hs, 1))
	hr := kmsg.NewPtrSASLHandshakeResponse()
	if err := hr.ReadFrom(raw.ReadResponse(1, false)); err != nil || hr.ErrorCode != 0 {
		t.Fatalf("handshake v0: %+v %v", hr, err)
	}
}

func bareFrame(token []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...)
}

// metadataWorks checks the connection is authenticated: Metadata is
// answered (before authentication it closes the connection).
func metadataWorks(t *testing.T, raw *itest.RawConn) {
	t.Helper()
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	raw.Write(itest.RequestFrame(md, 50))
	mr := kmsg.NewPtrMetadataResponse()
	mr.Version = 1
	if err := mr.ReadFrom(raw.ReadResponse(50, false)); err != nil || len(mr.Brokers) != 1 {
		t.Fatalf("metadata after authentication: %+v %v", mr, err)
	}
}

// scramV0 runs SCRAM-SHA-512 over bare tokens; pipelined sends the
// handshake and the client-first token in one write, without waiting
// for the handshake's answer.
func scramV0(t *testing.T, addr, password string, pipelined bool) (*itest.RawConn, error) {
	t.Helper()
	raw := itest.DialRaw(t, addr)
	client, err := xscram.SHA512.NewClient("carol", password, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	first, _ := conv.Step("")
	if pipelined {
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 0, "SCRAM-SHA-512"
		raw.Write(append(itest.RequestFrame(hs, 1), bareFrame([]byte(first))...))
		hr := kmsg.NewPtrSASLHandshakeResponse()
		if err := hr.ReadFrom(raw.ReadResponse(1, false)); err != nil || hr.ErrorCode != 0 {
			t.Fatalf("handshake v0: %+v %v", hr, err)
		}
	} else {
		handshakeV0(t, raw, "SCRAM-SHA-512")
		raw.Write(bareFrame([]byte(first)))
	}
	final, err := conv.Step(string(raw.ReadBare()))
	if err != nil {
		t.Fatalf("server-first refused: %v", err)
	}
	raw.Write(bareFrame([]byte(final)))
	raw.Nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(raw.Nc, size[:]); err != nil {
		return raw, err // closed: refused
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(raw.Nc, b); err != nil {
		t.Fatal(err)
	}
	if _, err := conv.Step(string(b)); err != nil || !conv.Valid() {
		t.Fatalf("server-final not verified: %v", err)
	}
	return raw, nil
}

// TestSASLHandshakeV0BareTokens: after SaslHandshake v0 the SASL tokens
// travel as bare frames, as Kafka's SaslServerAuthenticator serves them.
// PLAIN answers an empty frame, SCRAM-SHA-512 its two server messages
// (the server's signature verifies), also when the client sends its first
// token without waiting for the handshake's answer; the connection then
// serves requests. A wrong password closes the connection without an
// answer; a request before the token does not authenticate.
func TestSASLHandshakeV0BareTokens(t *testing.T) {
	c := saslV0Broker(t)
	addr := c.ListenerAddr("SASL_PLAINTEXT")

	raw := itest.DialRaw(t, addr)
	handshakeV0(t, raw, "PLAIN")
	raw.Write(bareFrame([]byte("\x00alice\x00alice-secret")))
	if got := raw.ReadBare(); len(got) != 0 {
		t.Fatalf("PLAIN answer %q, want an empty frame", got)
	}
	metadataWorks(t, raw)

	raw = itest.DialRaw(t, addr)
	handshakeV0(t, raw, "PLAIN")
	raw.Write(bareFrame([]byte("\x00alice\x00wrong")))
	raw.ExpectClosed()

	for _, pipelined := range []bool{false, true} {
		raw, err := scramV0(t, addr, "carol-secret", pipelined)
		if err != nil {
			t.Fatalf("SCRAM over bare tokens (pipelined %v): %v", pipelined, err)
		}
		metadataWorks(t, raw)
	}
	if _, err := scramV0(t, addr, "wrong", false); err == nil {
		t.Fatal("SCRAM with a wrong password over bare tokens was answered")
	}

	// After the v1 handshake, a bare token is not a request: closed.
	raw = itest.DialRaw(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	raw.Write(itest.RequestFrame(hs, 1))
	raw.ReadResponse(1, false)
	raw.Write(bareFrame([]byte("\x00alice\x00alice-secret")))
	raw.ExpectClosed()
}

// TestSASLHandshakeV0Hostile: garbage where a bare token is expected
// closes the connection (no answer, no panic): random bytes, an empty
// frame, a SaslAuthenticate request, a truncated frame, a token larger
// than sasl.server.max.receive.size, and a SCRAM client-final before the
// client-first; the broker then serves a legitimate client.
func TestSASLHandshakeV0Hostile(t *testing.T) {
	c := saslV0Broker(t)
	addr := c.ListenerAddr("SASL_PLAINTEXT")
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version, au.SASLAuthBytes = 1, []byte("\x00alice\x00alice-secret")
	for name, bytes := range map[string][]byte{
		"random":      bareFrame([]byte{0xff, 0x00, 0x13, 0x37, 0x80, 0x7f, 0x01}),
		"empty":       bareFrame(nil),
		"request":     itest.RequestFrame(au, 2),
		"huge":        binary.BigEndian.AppendUint32(nil, 100<<20),
		"negative":    binary.BigEndian.AppendUint32(nil, 0x80000000),
		"scram-final": bareFrame([]byte("c=biws,r=abc,p=AAAA")),
	} {
		for _, mech := range []string{"PLAIN", "SCRAM-SHA-512"} {
			t.Run(name+"/"+mech, func(t *testing.T) {
				raw := itest.DialRaw(t, addr)
				handshakeV0(t, raw, mech)
				raw.Write(bytes)
				raw.ExpectClosed()
			})
		}
	}
	raw := itest.DialRaw(t, addr)
	handshakeV0(t, raw, "PLAIN")
	raw.Write(bareFrame([]byte("\x00alice\x00alice-secret"))[:7]) // cut short, then the client goes
	raw.Nc.Close()
	if c.Broker() == nil {
		t.Fatal("broker gone")
	}
	if _, err := scramV0(t, addr, "carol-secret", false); err != nil {
		t.Fatalf("a legitimate client after the hostile ones: %v", err)
	}
}

// TestSASLHandshakeV0Sarama: sarama with Net.SASL.Version =
// SASLHandshakeV0 (bare tokens) produces with PLAIN and SCRAM-SHA-512;
// with a wrong password it is refused.
func TestSASLHandshakeV0Sarama(t *testing.T) {
	c := saslV0Broker(t)
	addr := c.ListenerAddr("SASL_PLAINTEXT")
	produce := func(mech sarama.SASLMechanism, user, pass, topic string) error {
		cfg := itest.SaramaCompatConfig()
		cfg.Net.SASL.Enable, cfg.Net.SASL.Mechanism = true, mech
		cfg.Net.SASL.Handshake, cfg.Net.SASL.Version = true, sarama.SASLHandshakeV0
		cfg.Net.SASL.User, cfg.Net.SASL.Password = user, pass
		cfg.Metadata.Retry.Max = 1
		cfg.ApiVersionsRequest = false // sarama's rule with SASL v0
		if mech == sarama.SASLTypeSCRAMSHA512 {
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &itest.SaramaSCRAM{Gen: xscram.SHA512} }
		}
		p, err := sarama.NewSyncProducer([]string{addr}, cfg)
		if err != nil {
			return err
		}
		defer p.Close()
		_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(topic)})
		return err
	}
	for _, tc := range []struct {
		mech       sarama.SASLMechanism
		user, pass string
	}{{sarama.SASLTypePlaintext, "alice", "alice-secret"}, {sarama.SASLTypeSCRAMSHA512, "carol", "carol-secret"}} {
		topic := "v0-" + string(tc.mech)
		itest.CreateCompatTopic(t, c, topic, 1)
		if err := produce(tc.mech, tc.user, tc.pass, topic); err != nil {
			t.Fatalf("sarama %s over SaslHandshake v0: %v", tc.mech, err)
		}
		got := itest.RecordValues(itest.KgoCompatRead(t, c.ListenerAddr("PLAINTEXT"), topic, false, 1))
		if !slices.Equal(got, []string{topic}) {
			t.Fatalf("%s: read back %v", tc.mech, got)
		}
		if err := produce(tc.mech, tc.user, "wrong", topic); err == nil {
			t.Fatalf("sarama %s with a wrong password produced", tc.mech)
		}
	}
}
