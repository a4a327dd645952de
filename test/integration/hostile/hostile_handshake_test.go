package hostile

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minibroker/minibroker/internal/security/certtest"
)

// TestHostileHandshakes: 1,000 connections that stop mid-TLS-handshake
// (500 on SASL_SSL send part of a ClientHello record) or mid-SASL (500 on
// SASL_PLAINTEXT send a SaslHandshake, then nothing) do not stop legitimate clients from
// connecting and producing over SSL and SASL_PLAINTEXT: handshakes run
// off the accept loop, each connection on its own. The set-ups in
// progress are counted in /metrics.
func TestHostileHandshakes(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 connections")
	}
	ca := certtest.NewCA(t, "ca")
	c, _ := itest.SaslBroker(t, ca)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(itest.NewClient(t, c.ListenerAddr("PLAINTEXT")))
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-secret"}}); err != nil {
		t.Fatal(err)
	}
	tlsAddr, saslAddr := c.ListenerAddr("SASL_SSL"), c.ListenerAddr("SASL_PLAINTEXT")

	var conns []net.Conn
	t.Cleanup(func() {
		for _, nc := range conns {
			nc.Close()
		}
	})
	// A TLS record header announcing a 512-byte ClientHello, and 5 of
	// its bytes.
	partialHello := []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	saslHandshake := itest.RequestFrame(hs, 1)
	for i := 0; i < 1000; i++ {
		addr, payload := tlsAddr, partialHello
		if i%2 == 1 {
			addr, payload = saslAddr, saslHandshake
		}
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, nc)
		if _, err := nc.Write(payload); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	// Wait until the broker holds them all in set-up.
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, _ := strconv.Atoi(itest.SaslMetric(t, c.HTTPAddr(), "minibroker_connection_setups_in_progress"))
		if v >= 1000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("set-ups in progress: %d", v)
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	tlsClient := itest.NewClient(t, tlsAddr, kgo.DialTLSConfig(ca.ClientTLS(t, nil)), kgo.AllowAutoTopicCreation(),
		kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism()))
	if err := itest.ProduceOne(t, tlsClient, "legit"); err != nil {
		t.Fatalf("legitimate SASL_SSL client during 1,000 stalled handshakes: %v", err)
	}
	saslClient := itest.NewClient(t, saslAddr, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.AllowAutoTopicCreation())
	if err := itest.ProduceOne(t, saslClient, "legit"); err != nil {
		t.Fatalf("legitimate SASL_PLAINTEXT client during 1,000 stalled handshakes: %v", err)
	}
	t.Logf("legitimate client produced in %v with 1,000 stalled handshakes", time.Since(start))
}
