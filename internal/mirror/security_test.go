package mirror

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const secret = "s3cr3t-Pa55"

// TestParseSourceConfig: every refusal names the setting, none quotes a
// secret, and the accepted forms come out as the client will use them.
func TestParseSourceConfig(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	jaas := func(module string) string {
		return "org.apache.kafka.common.security." + module + " required username=\"alice\" password=\"" + secret + "\";"
	}
	refused := []struct {
		cfg  map[string]string
		want string
	}{
		{map[string]string{"security.protocol": "TLS"}, "security.protocol"},
		{map[string]string{"bootstrap.servers": "x"}, "unknown source config bootstrap.servers"},
		{map[string]string{"ssl.key.password": secret, "security.protocol": "SSL"}, "ssl.key.password is set but there is no keystore"},
		{map[string]string{"ssl.keystore.password": secret, "security.protocol": "SSL"}, "ssl.keystore.password"},
		{map[string]string{"security.protocol": "SSL", "ssl.keystore.key": secret}, "ssl.keystore.key and ssl.keystore.certificate.chain go together"},
		{map[string]string{"security.protocol": "SSL", "ssl.keystore.key": secret, "ssl.keystore.certificate.chain": "x", "ssl.keystore.location": notPEM}, "not both"},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.certificates": secret}, "no PEM certificate"},
		{map[string]string{"sasl.mechanism": "PLAIN"}, "security.protocol is PLAINTEXT"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "a", "sasl.password": secret,
			"ssl.truststore.location": notPEM}, "ssl.truststore.location is set but security.protocol is SASL_PLAINTEXT"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.jaas.config": jaas("plain.PlainLoginModule")}, "sasl.mechanism is required"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI", "sasl.jaas.config": jaas("plain.PlainLoginModule")}, "GSSAPI"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}, "needs credentials"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas("plain.PlainLoginModule")},
			"needs the login module org.apache.kafka.common.security.scram.ScramLoginModule"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": "garbage " + secret},
			"sasl.jaas.config"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas("plain.PlainLoginModule"),
			"sasl.password": secret}, "not both"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "alice"}, "non-empty username and password"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
			"sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"a\" password=\"" + secret + "\" tokenauth=true;"},
			`option "tokenauth" is not supported`},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "JKS"}, "only PEM"},
		{map[string]string{"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "http"}, "ssl.endpoint.identification.algorithm"},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.location": filepath.Join(dir, "missing.pem")}, "no such file"},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.location": notPEM}, "no PEM certificate"},
		{map[string]string{"security.protocol": "SSL", "ssl.keystore.location": notPEM}, "no certificate in the chain"},
	}
	for _, r := range refused {
		_, err := parseSourceConfig(r.cfg)
		if err == nil {
			t.Fatalf("%v: accepted", RedactSourceConfig(r.cfg))
		}
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), r.want) {
			t.Fatalf("%v: %v, want ErrBadRequest with %q", RedactSourceConfig(r.cfg), err, r.want)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("the error quotes the password: %v", err)
		}
	}

	s, err := parseSourceConfig(nil)
	if err != nil || s.protocol != "PLAINTEXT" || s.usesTLS() || s.usesSASL() {
		t.Fatalf("empty: %+v %v", s, err)
	}
	s, err = parseSourceConfig(map[string]string{"security.protocol": "sasl_ssl", "sasl.mechanism": "scram-sha-512",
		"sasl.jaas.config": jaas("scram.ScramLoginModule"), "ssl.endpoint.identification.algorithm": ""})
	if err != nil || s.protocol != "SASL_SSL" || s.mechanism != "SCRAM-SHA-512" || s.username != "alice" || s.password != secret || s.verifyHostname {
		t.Fatalf("SASL_SSL: %+v %v", s, err)
	}
	if opts, err := s.kgoOpts(nil, time.Second); err != nil || len(opts) != 2 {
		t.Fatalf("kgo options: %d %v", len(opts), err)
	}
	s, err = parseSourceConfig(map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
		"sasl.username": "alice", "sasl.password": secret})
	if err != nil || s.username != "alice" || s.password != secret || !s.verifyHostname {
		t.Fatalf("sasl.username: %+v %v", s, err)
	}
}

func TestRedactSourceConfig(t *testing.T) {
	in := map[string]string{"security.protocol": "SASL_SSL", "sasl.jaas.config": secret, "sasl.password": secret,
		"sasl.username": "alice", "made.up": secret}
	out := RedactSourceConfig(in)
	for k, v := range out {
		if strings.Contains(v, secret) {
			t.Fatalf("%s shown: %q", k, v)
		}
	}
	if out["security.protocol"] != "SASL_SSL" || out["sasl.username"] != "alice" || out["sasl.jaas.config"] != Hidden {
		t.Fatalf("%v", out)
	}
	for _, k := range []string{"ssl.key.password", "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates"} {
		if RedactSourceConfig(map[string]string{k: secret})[k] != Hidden {
			t.Fatalf("%s shown", k)
		}
	}
	if in["sasl.password"] != secret {
		t.Fatal("the input was changed")
	}
}
