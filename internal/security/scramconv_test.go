package security

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/internal/vfs"
)

// rdkafkaClient plays a SCRAM client by hand, so that the test chooses the
// nonce its client-final message carries. nonce(cnonce, full) returns it:
// RFC 5802 wants full; librdkafka before 2.6.1 sends cnonce+full.
type rdkafkaClient struct {
	mechanism, user, password string
	nonce                     func(cnonce, full string) string
	cbind                     string // base64 gs2 header; "" is "biws" (n,,)
	proof                     func([]byte) string
}

// run returns the server's final message and error; the server's
// signature is checked when it answers.
func (c rdkafkaClient) run(t *testing.T, srv *SASLServer) (principal string, err error) {
	t.Helper()
	conv, err := srv.Start(c.mechanism)
	if err != nil {
		t.Fatal(err)
	}
	cnonce := "-~.AbC/=+xyz09" + strconv.Itoa(len(c.user)) // librdkafka's alphabet: 0x2d to 0x7e
	c1 := "n,,n=" + c.user + ",r=" + cnonce
	s1b, _, err := conv.Step([]byte(c1))
	if err != nil {
		return "", err
	}
	s1 := string(s1b)
	attrs := map[string]string{}
	for _, f := range strings.Split(s1, ",") {
		attrs[f[:1]] = f[2:]
	}
	salt, _ := base64.StdEncoding.DecodeString(attrs["s"])
	iters, _ := strconv.Atoi(attrs["i"])
	h, _, _ := scramHash(c.mechanism)
	salted, err := pbkdf2.Key(h, c.password, salt, iters, h().Size())
	if err != nil {
		t.Fatal(err)
	}
	mac := func(key []byte, msg string) []byte { m := hmac.New(h, key); m.Write([]byte(msg)); return m.Sum(nil) }
	clientKey := mac(salted, "Client Key")
	sum := h()
	sum.Write(clientKey)
	cbind := c.cbind
	if cbind == "" {
		cbind = "biws"
	}
	c2wop := "c=" + cbind + ",r=" + c.nonce(cnonce, attrs["r"])
	authMsg := c1[3:] + "," + s1 + "," + c2wop
	proof := mac(sum.Sum(nil), authMsg)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	p := base64.StdEncoding.EncodeToString(proof)
	if c.proof != nil {
		p = c.proof(proof)
	}
	final, done, err := conv.Step([]byte(c2wop + ",p=" + p))
	if err != nil {
		return "", err
	}
	if !done {
		t.Fatal("not done after the client-final message")
	}
	if want := "v=" + base64.StdEncoding.EncodeToString(mac(mac(salted, "Server Key"), authMsg)); string(final) != want {
		t.Fatalf("server signature %q, want %q", final, want)
	}
	return conv.Principal(), nil
}

// TestSCRAMLibrdkafkaNonce: librdkafka before 2.6.1 (kcat 1.7.1 has
// 2.0.2) echoes its own nonce before the server's whole nonce in its
// client-final message. It is accepted, with its proof verified, for both
// mechanisms; with the allowance off it is refused as xdg-go refuses it
// (the negative control); a wrong password, another prefix, a foreign
// channel binding and malformed proofs are refused either way.
func TestSCRAMLibrdkafkaNonce(t *testing.T) {
	store, err := OpenScramStore(vfs.Default, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		if err := store.AddPassword(m, "alice", "alice-secret", 4096); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := NewSASLServer([]string{ScramSHA256, ScramSHA512}, nil, store)
	if err != nil {
		t.Fatal(err)
	}
	rfc := func(_, full string) string { return full }
	rdkafka := func(cnonce, full string) string { return cnonce + full }
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		for _, nonce := range []func(string, string) string{rfc, rdkafka} {
			if p, err := (rdkafkaClient{mechanism: m, user: "alice", password: "alice-secret", nonce: nonce}).run(t, srv); err != nil || p != "User:alice" {
				t.Fatalf("%s: %q %v", m, p, err)
			}
		}
		refused := []rdkafkaClient{
			{password: "wrong", nonce: rdkafka},
			{password: "alice-secret", nonce: func(c, full string) string { return "x" + c + full }},
			{password: "alice-secret", nonce: func(_, full string) string { return full + full }},
			{password: "alice-secret", nonce: rdkafka, cbind: "eSws"}, // y,,
			{password: "alice-secret", nonce: rdkafka, proof: func(p []byte) string { return "!!" }},
			{password: "alice-secret", nonce: rdkafka, proof: func(p []byte) string { return base64.StdEncoding.EncodeToString(p[1:]) }},
			{user: "bob", password: "alice-secret", nonce: rdkafka},
		}
		for i, c := range refused {
			c.mechanism = m
			if c.user == "" {
				c.user = "alice"
			}
			if p, err := c.run(t, srv); err == nil {
				t.Errorf("%s case %d accepted as %q", m, i, p)
			}
		}
	}
	srv.knobs.refuseLibrdkafkaNonce = true
	_, err = rdkafkaClient{mechanism: ScramSHA512, user: "alice", password: "alice-secret", nonce: rdkafka}.run(t, srv)
	if err == nil || !strings.Contains(err.Error(), "nonce") {
		t.Fatalf("without the allowance librdkafka's nonce gave %v, want xdg-go's nonce refusal", err)
	}
	t.Logf("negative control: without the allowance librdkafka's SCRAM is refused: %v", err)
}
