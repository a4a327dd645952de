package config

import (
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	text := "# a client.properties\n" +
		"! also a comment\n" +
		"security.protocol=SASL_SSL\n" +
		"  sasl.mechanism : SCRAM-SHA-512\n" +
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n" +
		"    username=\"mirror\" \\\n" +
		"    password=\"p\\\\w=d:x\";\r\n" +
		"ssl.truststore.location /etc/ca.pem\n" +
		"ssl.endpoint.identification.algorithm=\n" +
		"key\\ with\\=escapes=caf\\u00e9\\t!\n"
	got, err := ParseProperties(text)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"security.protocol":                     "SASL_SSL",
		"sasl.mechanism":                        "SCRAM-SHA-512",
		"sasl.jaas.config":                      `org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror" password="p\w=d:x";`,
		"ssl.truststore.location":               "/etc/ca.pem",
		"ssl.endpoint.identification.algorithm": "",
		"key with=escapes":                      "café\t!",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d keys: %q", len(got), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %q, want %q", k, got[k], v)
		}
	}
	_, err = ParseProperties("a=1\nsasl.password=sec\\u12G4ret\n")
	if err == nil || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), "sec") && strings.Contains(err.Error(), "ret") {
		t.Fatalf("bad escape: %v", err)
	}
}
