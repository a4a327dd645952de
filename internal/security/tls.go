package security

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// TLSSettings are one listener's ssl.* settings (KIP-651 PEM forms).
type TLSSettings struct {
	Listener string
	// KeystoreLocation is ssl.keystore.location: a PEM file with the
	// private key and the certificate chain. Re-read when it changes.
	KeystoreLocation string
	// KeystoreKey and KeystoreChain are ssl.keystore.key and
	// ssl.keystore.certificate.chain: the same, inline.
	KeystoreKey, KeystoreChain string
	// KeyPassword is ssl.key.password, for an encrypted PKCS#8 key.
	KeyPassword string
	// TruststoreLocation / TruststoreCertificates: CA certificates that
	// client certificates are verified against.
	TruststoreLocation, TruststoreCertificates string
	// ClientAuth is ssl.client.auth: none, requested or required.
	ClientAuth string
	// Protocols is ssl.enabled.protocols (TLSv1.2, TLSv1.3).
	Protocols []string
	// CipherSuites is ssl.cipher.suites by IANA name (TLS 1.2 only).
	CipherSuites []string
}

// Keystore serves a listener's certificate, re-reading its file when it
// changes (checked at most once per reloadCheckInterval, at a handshake).
type Keystore struct {
	settings TLSSettings
	logger   *zap.Logger

	mu        sync.Mutex // guards the fields below
	cert      *tls.Certificate
	modTime   time.Time
	size      int64
	checkedAt time.Time
}

// reloadCheckInterval is how often a handshake may stat the keystore file.
const reloadCheckInterval = time.Second

// ServerTLS builds a listener's server TLS configuration.
func ServerTLS(s TLSSettings, logger *zap.Logger) (*tls.Config, *Keystore, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	ks := &Keystore{settings: s, logger: logger}
	if err := ks.load(true); err != nil {
		return nil, nil, err
	}
	cfg := &tls.Config{GetCertificate: ks.getCertificate}
	var err error
	if cfg.MinVersion, cfg.MaxVersion, err = tlsVersions(s.Protocols); err != nil {
		return nil, nil, err
	}
	if cfg.CipherSuites, err = cipherSuites(s.CipherSuites); err != nil {
		return nil, nil, err
	}
	switch s.ClientAuth {
	case "", "none":
		cfg.ClientAuth = tls.NoClientCert
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, nil, fmt.Errorf("ssl.client.auth %q: want none, requested or required", s.ClientAuth)
	}
	if cfg.ClientCAs, err = trustPool(s); err != nil {
		return nil, nil, err
	}
	if cfg.ClientAuth != tls.NoClientCert && cfg.ClientCAs == nil {
		return nil, nil, fmt.Errorf("ssl.client.auth=%s needs ssl.truststore.location or ssl.truststore.certificates", s.ClientAuth)
	}
	return cfg, ks, nil
}

func trustPool(s TLSSettings) (*x509.CertPool, error) {
	return LoadTrustPool(s.TruststoreLocation, s.TruststoreCertificates)
}

// LoadTrustPool reads CA certificates, KIP-651's PEM truststore: the file
// ssl.truststore.location names, or ssl.truststore.certificates inline
// (not both). Neither: nil (the caller's default). Listeners and the
// mirror's source client share it.
func LoadTrustPool(location, certificates string) (*x509.CertPool, error) {
	raw := inlinePEM(certificates)
	if location != "" {
		if len(raw) > 0 {
			return nil, errors.New("set ssl.truststore.location or ssl.truststore.certificates, not both")
		}
		b, err := os.ReadFile(location)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		raw = b
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		return nil, errors.New("truststore: no PEM certificate found")
	}
	return pool, nil
}

// LoadKeystore reads a KIP-651 PEM keystore: the file
// ssl.keystore.location names (private key and certificate chain), or
// ssl.keystore.key with ssl.keystore.certificate.chain inline; an
// encrypted PKCS#8 key is decrypted with ssl.key.password. Neither given:
// nil. Errors never quote the key or the password. Listeners and the
// mirror's source client share it.
func LoadKeystore(location, key, chain, password string) (*tls.Certificate, error) {
	cert, _, err := readKeystore(TLSSettings{KeystoreLocation: location, KeystoreKey: key, KeystoreChain: chain, KeyPassword: password}, false)
	return cert, err
}

// pemOnOneLine matches a PEM block whose line breaks were lost.
var pemOnOneLine = regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]+)-----([A-Za-z0-9+/=\s]*?)-----END ([A-Z0-9 ]+)-----`)

// inlinePEM is an inline PEM setting's bytes. A value written in a
// .properties file with continuation lines, as Kafka documents KIP-651's
// inline settings, arrives on one line (blocks and base64 separated by
// spaces), which Kafka's PEM reader takes and encoding/pem does not: its
// blocks are put back on lines.
func inlinePEM(v string) []byte {
	if strings.Contains(v, "\n") || !strings.Contains(v, "-----BEGIN ") {
		return []byte(v)
	}
	var b strings.Builder
	for _, m := range pemOnOneLine.FindAllStringSubmatch(v, -1) {
		b.WriteString("-----BEGIN " + m[1] + "-----\n")
		for _, f := range strings.Fields(m[2]) {
			b.WriteString(f + "\n")
		}
		b.WriteString("-----END " + m[3] + "-----\n")
	}
	return []byte(b.String())
}

// readKeystore reads s's keystore (st: the file's, when it is a file).
// required: neither form given is an error, else nil.
func readKeystore(s TLSSettings, required bool) (*tls.Certificate, os.FileInfo, error) {
	var keyPEM, chainPEM []byte
	var st os.FileInfo
	switch {
	case s.KeystoreLocation != "" && (s.KeystoreKey != "" || s.KeystoreChain != ""):
		return nil, nil, errors.New("set ssl.keystore.location or ssl.keystore.key with ssl.keystore.certificate.chain, not both")
	case s.KeystoreLocation != "":
		var err error
		if st, err = os.Stat(s.KeystoreLocation); err != nil {
			return nil, nil, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		b, err := os.ReadFile(s.KeystoreLocation)
		if err != nil {
			return nil, nil, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		keyPEM, chainPEM = b, b
	case s.KeystoreKey != "" && s.KeystoreChain != "":
		keyPEM, chainPEM = inlinePEM(s.KeystoreKey), inlinePEM(s.KeystoreChain)
	case s.KeystoreKey != "" || s.KeystoreChain != "":
		return nil, nil, errors.New("ssl.keystore.key and ssl.keystore.certificate.chain go together")
	case s.KeyPassword != "":
		return nil, nil, errors.New("ssl.key.password is set but there is no keystore")
	case !required:
		return nil, nil, nil
	default:
		return nil, nil, errors.New("a TLS listener needs ssl.keystore.location, or ssl.keystore.key and ssl.keystore.certificate.chain")
	}
	cert, err := parseKeystore(keyPEM, chainPEM, s.KeyPassword)
	if err != nil {
		return nil, nil, fmt.Errorf("keystore: %w", err)
	}
	return cert, st, nil
}

func tlsVersions(names []string) (lo, hi uint16, err error) {
	if len(names) == 0 {
		names = []string{"TLSv1.2", "TLSv1.3"}
	}
	for _, n := range names {
		var v uint16
		switch n {
		case "TLSv1.2":
			v = tls.VersionTLS12
		case "TLSv1.3":
			v = tls.VersionTLS13
		default:
			return 0, 0, fmt.Errorf("ssl.enabled.protocols: %q is not TLSv1.2 or TLSv1.3", n)
		}
		if lo == 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	return lo, hi, nil
}

// cipherSuites maps IANA names to Go's suite ids; only Go's secure
// suites are accepted.
func cipherSuites(names []string) ([]uint16, error) {
	if len(names) == 0 {
		return nil, nil
	}
	known := map[string]uint16{}
	for _, cs := range tls.CipherSuites() {
		known[cs.Name] = cs.ID
	}
	var out []uint16
	for _, n := range names {
		id, ok := known[n]
		if !ok {
			return nil, fmt.Errorf("ssl.cipher.suites: %q is not a cipher suite minibroker accepts", n)
		}
		out = append(out, id)
	}
	return out, nil
}

// load reads the keystore; first: at start-up (an error is fatal),
// otherwise a reload (an error keeps the certificate being served).
func (k *Keystore) load(first bool) error {
	s := k.settings
	cert, st, err := readKeystore(s, true)
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.cert = cert
	if st != nil {
		k.modTime, k.size = st.ModTime(), st.Size()
	}
	k.checkedAt = time.Now()
	k.mu.Unlock()
	what := "serving certificate"
	if !first {
		what = "keystore changed: serving certificate"
	}
	k.logger.Info(what, zap.String("listener", s.Listener), zap.String("subject", cert.Leaf.Subject.String()),
		zap.String("serial", cert.Leaf.SerialNumber.String()), zap.Time("not_after", cert.Leaf.NotAfter))
	return nil
}

// getCertificate serves the current certificate, re-reading the keystore
// file first if it changed since the last check.
func (k *Keystore) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if k.settings.KeystoreLocation != "" {
		k.maybeReload()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cert, nil
}

func (k *Keystore) maybeReload() {
	k.mu.Lock()
	if time.Since(k.checkedAt) < reloadCheckInterval {
		k.mu.Unlock()
		return
	}
	k.checkedAt = time.Now()
	modTime, size := k.modTime, k.size
	k.mu.Unlock()
	st, err := os.Stat(k.settings.KeystoreLocation)
	if err != nil || (st.ModTime().Equal(modTime) && st.Size() == size) {
		return
	}
	if err := k.load(false); err != nil {
		k.logger.Warn("keystore changed but cannot be read: still serving the previous certificate",
			zap.String("listener", k.settings.Listener), zap.Error(err))
		k.mu.Lock()
		k.modTime, k.size = st.ModTime(), st.Size() // do not retry until it changes again
		k.mu.Unlock()
	}
}

// Certificate is the certificate being served.
func (k *Keystore) Certificate() *x509.Certificate {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cert.Leaf
}

// parseKeystore reads a private key (PKCS#8, optionally encrypted with
// password; PKCS#1 and SEC 1 are accepted too) and a certificate chain.
func parseKeystore(keyPEM, chainPEM []byte, password string) (*tls.Certificate, error) {
	var cert tls.Certificate
	for rest := chainPEM; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type == "CERTIFICATE" {
			cert.Certificate = append(cert.Certificate, blk.Bytes)
		}
	}
	if len(cert.Certificate) == 0 {
		return nil, errors.New("no certificate in the chain")
	}
	var keyDER []byte
	var keyType string
	for rest := keyPEM; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if strings.HasSuffix(blk.Type, "PRIVATE KEY") {
			keyDER, keyType = blk.Bytes, blk.Type
			break
		}
	}
	if keyDER == nil {
		return nil, errors.New("no private key")
	}
	var key any
	var err error
	switch keyType {
	case "ENCRYPTED PRIVATE KEY":
		if password == "" {
			return nil, errors.New("the private key is encrypted: set ssl.key.password")
		}
		der, err := decryptPKCS8(keyDER, []byte(password))
		if err != nil {
			return nil, err
		}
		key, err = x509.ParsePKCS8PrivateKey(der)
		if err != nil {
			return nil, fmt.Errorf("decrypted private key: %w (wrong ssl.key.password?)", err)
		}
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(keyDER)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(keyDER)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(keyDER)
	default:
		return nil, fmt.Errorf("private key of type %q", keyType)
	}
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	cert.PrivateKey = key
	if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	// The key must match the certificate (tls.X509KeyPair's check).
	if _, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), mustPKCS8(key)); err != nil {
		return nil, fmt.Errorf("key and certificate: %w", err)
	}
	return &cert, nil
}

func mustPKCS8(key any) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}
