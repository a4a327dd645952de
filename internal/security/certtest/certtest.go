// Package certtest makes certificates for tests with crypto/x509: a CA,
// server and client certificates signed by it, PEM keystores (key and
// chain in one file, as KIP-651's ssl.keystore.location) and encrypted
// PKCS#8 keys. Nothing is checked in; every test makes its own.
package certtest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate (a truststore).
	PEM []byte
}

// Leaf is a certificate with its key.
type Leaf struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte // the certificate
	KeyPEM  []byte // its PKCS#8 key, unencrypted
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// NewCA makes a self-signed CA named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: cn, Organization: []string{"minibroker tests"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Server issues a server certificate for 127.0.0.1, ::1 and localhost
// (and hosts), with subject CN=cn.
func (ca *CA) Server(t testing.TB, cn string, hosts ...string) *Leaf {
	t.Helper()
	tmpl := ca.template(t, pkix.Name{CommonName: cn})
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	tmpl.DNSNames = append([]string{"localhost"}, hosts...)
	return ca.sign(t, tmpl)
}

// Client issues a client certificate with subject CN=cn, OU=ou, O=org.
func (ca *CA) Client(t testing.TB, cn, ou, org string) *Leaf {
	t.Helper()
	tmpl := ca.template(t, pkix.Name{CommonName: cn, OrganizationalUnit: []string{ou}, Organization: []string{org}})
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.sign(t, tmpl)
}

func (ca *CA) template(t testing.TB, subject pkix.Name) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: serial(t), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
}

func (ca *CA) sign(t testing.TB, tmpl *x509.Certificate) *Leaf {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &Leaf{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})}
}

// Keystore is the PEM keystore of KIP-651's ssl.keystore.location: the
// key, then the certificate.
func (l *Leaf) Keystore() []byte { return append(append([]byte{}, l.KeyPEM...), l.CertPEM...) }

// TLSCertificate is the leaf as a client certificate for crypto/tls.
func (l *Leaf) TLSCertificate(t testing.TB) tls.Certificate {
	c, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Pool is a cert pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// ClientTLS is a client TLS configuration trusting ca, presenting client
// when not nil.
func (ca *CA) ClientTLS(t testing.TB, client *Leaf) *tls.Config {
	cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
	if client != nil {
		cfg.Certificates = []tls.Certificate{client.TLSCertificate(t)}
	}
	return cfg
}

// WriteFile writes b to dir/name (mode 0600) and returns its path.
func WriteFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// EncryptedKeyPEM is the leaf's key as an encrypted PKCS#8 PEM block
// (PBES2: PBKDF2 with HMAC-SHA256, AES-256-CBC), as
// `openssl pkcs8 -topk8 -v2 aes256` writes it.
func (l *Leaf) EncryptedKeyPEM(t testing.TB, password string) []byte {
	t.Helper()
	blk, _ := pem.Decode(l.KeyPEM)
	salt, iv := make([]byte, 16), make([]byte, 16)
	rand.Read(salt)
	rand.Read(iv)
	const iterations = 2048
	key, err := pbkdf2.Key(sha256.New, password, salt, iterations, 32)
	if err != nil {
		t.Fatal(err)
	}
	pad := aes.BlockSize - len(blk.Bytes)%aes.BlockSize
	plain := append(append([]byte{}, blk.Bytes...), make([]byte, pad)...)
	for i := len(plain) - pad; i < len(plain); i++ {
		plain[i] = byte(pad)
	}
	block, _ := aes.NewCipher(key)
	enc := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(enc, plain)

	type algo struct {
		Algorithm  asn1.ObjectIdentifier
		Parameters asn1.RawValue `asn1:"optional"`
	}
	raw := func(v any) asn1.RawValue {
		b, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return asn1.RawValue{FullBytes: b}
	}
	kdf := struct {
		Salt       []byte
		Iterations int
		PRF        algo
	}{salt, iterations, algo{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}, Parameters: asn1.NullRawValue}}
	params := struct{ KDF, Scheme algo }{
		KDF:    algo{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}, Parameters: raw(kdf)},
		Scheme: algo{Algorithm: asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}, Parameters: raw(iv)},
	}
	info := struct {
		Algo algo
		Data []byte
	}{algo{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}, Parameters: raw(params)}, enc}
	der, err := asn1.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der})
}
