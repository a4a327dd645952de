package integration

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// srcPKI is a certificate authority made by a test (never checked in),
// with PEM files in Kafka's PEM store layout: a truststore of the CA, and
// keystores of a private key followed by its certificate chain.
type srcPKI struct {
	t    *testing.T
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CAFile is the truststore (ssl.truststore.location).
	CAFile string
}

var srcPKISerial struct {
	sync.Mutex
	n int64
}

func newSrcPKI(t *testing.T, name string) *srcPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          srcPKINextSerial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	p := &srcPKI{t: t, dir: t.TempDir(), cert: cert, key: key}
	p.CAFile = filepath.Join(p.dir, name+"-ca.pem")
	if err := os.WriteFile(p.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func srcPKINextSerial() *big.Int {
	srcPKISerial.Lock()
	defer srcPKISerial.Unlock()
	srcPKISerial.n++
	return big.NewInt(time.Now().UnixNano() + srcPKISerial.n)
}

// issue signs a leaf certificate for the names (DNS names or IPs) and
// returns it as a tls.Certificate and as a PEM keystore file (key, then
// the chain).
func (p *srcPKI) issue(cn string, client bool, names ...string) (tls.Certificate, string) {
	p.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: srcPKINextSerial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		p.t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		p.t.Fatal(err)
	}
	var buf bytes.Buffer
	pem.Encode(&buf, &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: p.cert.Raw})
	file := filepath.Join(p.dir, cn+"-keystore.pem")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		p.t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(buf.Bytes(), buf.Bytes())
	if err != nil {
		p.t.Fatal(err)
	}
	return pair, file
}

// pool is the CA as a certificate pool.
func (p *srcPKI) pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.cert)
	return pool
}

// serverTLS is a listener's TLS config serving a certificate for names;
// requireClient asks for a client certificate signed by this CA (mTLS).
func (p *srcPKI) serverTLS(requireClient bool, names ...string) *tls.Config {
	cert, _ := p.issue("server", false, names...)
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if requireClient {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, p.pool()
	}
	return c
}

// clientTLS is a client's TLS config trusting this CA.
func (p *srcPKI) clientTLS() *tls.Config {
	return &tls.Config{RootCAs: p.pool(), MinVersion: tls.VersionTLS12}
}
