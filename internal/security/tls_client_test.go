package security

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/internal/security/certtest"
)

// oneLine is a PEM value as a .properties file with continuation lines
// delivers it: everything on one line, separated by spaces.
func oneLine(pem []byte) string { return strings.Join(strings.Fields(string(pem)), " ") }

// TestLoadClientStores: the loaders the mirror's source client shares
// with the listeners take a keystore file with an encrypted key and its
// password, inline key and chain, inline CAs, and the same inline values
// flattened to one line (Kafka's documented .properties form). A wrong or
// missing password, half an inline keystore, a key of another
// certificate, a password without a keystore, and both forms at once are
// refused, never quoting the password; nothing given is no certificate.
func TestLoadClientStores(t *testing.T) {
	ca := certtest.NewCA(t, "ca")
	leaf, other := ca.Client(t, "mirror", "ops", "acme"), ca.Client(t, "other", "ops", "acme")
	const pw = "pa55-Word-zz9"
	dir := t.TempDir()
	enc := certtest.WriteFile(t, dir, "enc.pem", append(leaf.EncryptedKeyPEM(t, pw), leaf.CertPEM...))
	for name, load := range map[string]func() (string, error){
		"encrypted file": func() (string, error) { return subject(LoadKeystore(enc, "", "", pw)) },
		"inline": func() (string, error) {
			return subject(LoadKeystore("", string(leaf.KeyPEM), string(leaf.CertPEM), ""))
		},
		"inline one line": func() (string, error) {
			return subject(LoadKeystore("", oneLine(leaf.EncryptedKeyPEM(t, pw)), oneLine(append(leaf.CertPEM, ca.PEM...)), pw))
		},
	} {
		if got, err := load(); err != nil || got != leaf.Cert.Subject.String() {
			t.Fatalf("%s: %q %v", name, got, err)
		}
	}
	for name, ca := range map[string]string{"inline": string(ca.PEM), "one line": oneLine(ca.PEM)} {
		if pool, err := LoadTrustPool("", ca); err != nil || pool == nil {
			t.Fatalf("truststore %s: %v", name, err)
		}
	}
	if c, err := LoadKeystore("", "", "", ""); c != nil || err != nil {
		t.Fatalf("nothing given: %v %v", c, err)
	}
	for name, err := range map[string]error{
		"wrong password":      second(LoadKeystore(enc, "", "", "wrong-"+pw)),
		"no password":         second(LoadKeystore(enc, "", "", "")),
		"key without chain":   second(LoadKeystore("", string(leaf.KeyPEM), "", "")),
		"key of another cert": second(LoadKeystore("", string(other.KeyPEM), string(leaf.CertPEM), "")),
		"password, no store":  second(LoadKeystore("", "", "", pw)),
		"file and inline":     second(LoadKeystore(enc, string(leaf.KeyPEM), string(leaf.CertPEM), pw)),
		"truststore twice":    second(LoadTrustPool(enc, string(ca.PEM))),
	} {
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "PRIVATE KEY-----") {
			t.Fatalf("%s: the error quotes a secret: %v", name, err)
		}
	}
}

func subject(c *tls.Certificate, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return c.Leaf.Subject.String(), nil
}

func second[T any](_ T, err error) error { return err }
