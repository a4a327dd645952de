package mirror

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/security"
)

// A mirror's source connection takes Kafka's client security settings,
// by their client names:
//
//	security.protocol                       PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL
//	sasl.mechanism                          PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
//	sasl.jaas.config                        PlainLoginModule / ScramLoginModule required username="…" password="…";
//	sasl.username, sasl.password            librdkafka's names, instead of sasl.jaas.config
//	ssl.truststore.location                 PEM file of the CAs to trust (default: the system's)
//	ssl.truststore.certificates             the same, inline PEM (KIP-651)
//	ssl.truststore.type, ssl.keystore.type  PEM only
//	ssl.keystore.location                   PEM file with the client key and its chain (mTLS)
//	ssl.keystore.key                        the key, inline PEM, with ssl.keystore.certificate.chain (KIP-651)
//	ssl.key.password                        password of an encrypted PKCS#8 key
//	ssl.endpoint.identification.algorithm   https (default: check the host name) or empty (do not)
//
// Deviations from Kafka's Java client: sasl.mechanism has no default
// (Kafka's is GSSAPI, which minibroker does not speak); stores are PEM only
// (Kafka's default type is JKS); settings of a protocol the mirror does not
// use (sasl.* with SSL, ssl.* with SASL_PLAINTEXT) are refused rather than
// ignored, so a config that reads as encrypted is encrypted.
//
// The files are read on the broker, when the setting is accepted and each
// time the source client is made (so a renewed certificate is picked up
// when the mirror reconnects after an alter or a restart).

// Setting names.
const (
	cfgSecurityProtocol = "security.protocol"
	cfgSASLMechanism    = "sasl.mechanism"
	cfgSASLJaasConfig   = "sasl.jaas.config"
	cfgSASLUsername     = "sasl.username"
	cfgSASLPassword     = "sasl.password"
	cfgTruststoreLoc    = "ssl.truststore.location"
	cfgTruststoreType   = "ssl.truststore.type"
	cfgKeystoreLoc      = "ssl.keystore.location"
	cfgKeystoreType     = "ssl.keystore.type"
	cfgKeystoreKey      = "ssl.keystore.key"
	cfgKeystoreChain    = "ssl.keystore.certificate.chain"
	cfgKeyPassword      = "ssl.key.password"
	cfgTruststoreCerts  = "ssl.truststore.certificates"
	cfgEndpointIdent    = "ssl.endpoint.identification.algorithm"
)

// Hidden is what describe, list, the admin API and the logs show instead of
// a secret setting's value (Kafka's ConfigDef shows password types so).
const Hidden = "[hidden]"

// sourceSettingNames lists the accepted settings; secret ones are never
// shown. The inline PEM settings are secret as Kafka's ConfigDef types
// them (PASSWORD), the chain and CAs included.
var sourceSettingNames = map[string]bool{ // name → secret
	cfgSecurityProtocol: false,
	cfgSASLMechanism:    false,
	cfgSASLJaasConfig:   true,
	cfgSASLUsername:     false,
	cfgSASLPassword:     true,
	cfgTruststoreLoc:    false,
	cfgTruststoreType:   false,
	cfgKeystoreLoc:      false,
	cfgKeystoreType:     false,
	cfgKeystoreKey:      true,
	cfgKeystoreChain:    true,
	cfgKeyPassword:      true,
	cfgTruststoreCerts:  true,
	cfgEndpointIdent:    false,
}

// notSupported names Kafka client settings minibroker knows but does not
// take, with why, so the refusal says more than "unknown".
var notSupported = map[string]string{
	"ssl.keystore.password":             "stores are PEM, which have no store password (an encrypted key takes ssl.key.password)",
	"ssl.truststore.password":           "stores are PEM, which have no password",
	"sasl.kerberos.service.name":        "GSSAPI (Kerberos) is not supported",
	"sasl.login.callback.handler.class": "login callbacks are Java classes; not supported",
}

// RedactSourceConfig returns settings with every secret value replaced by
// Hidden; it is what leaves the broker.
func RedactSourceConfig(settings map[string]string) map[string]string {
	if len(settings) == 0 {
		return nil
	}
	out := make(map[string]string, len(settings))
	for k, v := range settings {
		if secret, known := sourceSettingNames[k]; secret || !known {
			v = Hidden
		}
		out[k] = v
	}
	return out
}

// sourceSecurity is a parsed, checked source config.
type sourceSecurity struct {
	protocol   string // PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
	mechanism  string // PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (SASL only)
	username   string
	password   string
	truststore string // path, "" for the system's CAs (or truststoreCerts)
	keystore   string // path, "" for no client certificate (or keystoreKey)
	// Inline PEM (KIP-651) and the key's password.
	truststoreCerts, keystoreKey, keystoreChain, keyPassword string
	verifyHostname                                           bool
}

func (s sourceSecurity) usesTLS() bool { return s.protocol == "SSL" || s.protocol == "SASL_SSL" }
func (s sourceSecurity) usesSASL() bool {
	return s.protocol == "SASL_PLAINTEXT" || s.protocol == "SASL_SSL"
}

// parseSourceConfig checks a mirror's source settings: names, values, the
// way they fit together, and the PEM files they name. Its errors name the
// setting and never quote a secret value.
func parseSourceConfig(settings map[string]string) (sourceSecurity, error) {
	var unknown []string
	for k := range settings {
		if why, ok := notSupported[k]; ok {
			return sourceSecurity{}, fmt.Errorf("%w: source config %s: %s", ErrBadRequest, k, why)
		}
		if _, ok := sourceSettingNames[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		names := make([]string, 0, len(sourceSettingNames))
		for k := range sourceSettingNames {
			names = append(names, k)
		}
		sort.Strings(names)
		return sourceSecurity{}, fmt.Errorf("%w: unknown source config %s (a mirror's source takes: %s)",
			ErrBadRequest, strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	bad := func(format string, args ...any) (sourceSecurity, error) {
		return sourceSecurity{}, fmt.Errorf("%w: source config "+format, append([]any{ErrBadRequest}, args...)...)
	}
	get := func(k string) (string, bool) { v, ok := settings[k]; return strings.TrimSpace(v), ok }

	s := sourceSecurity{protocol: "PLAINTEXT", verifyHostname: true}
	if v, ok := get(cfgSecurityProtocol); ok {
		s.protocol = strings.ToUpper(v) // Kafka's SecurityProtocol.forName upper-cases
	}
	switch s.protocol {
	case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return bad("%s=%q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", cfgSecurityProtocol, settings[cfgSecurityProtocol])
	}
	for k := range settings {
		switch {
		case strings.HasPrefix(k, "sasl.") && !s.usesSASL():
			return bad("%s is set but %s is %s: use SASL_PLAINTEXT or SASL_SSL", k, cfgSecurityProtocol, s.protocol)
		case strings.HasPrefix(k, "ssl.") && !s.usesTLS():
			return bad("%s is set but %s is %s: use SSL or SASL_SSL", k, cfgSecurityProtocol, s.protocol)
		}
	}

	if s.usesSASL() {
		mech, ok := get(cfgSASLMechanism)
		if !ok || mech == "" {
			return bad("%s is required with %s (Kafka's default, GSSAPI, is not supported): PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", cfgSASLMechanism, s.protocol)
		}
		s.mechanism = strings.ToUpper(mech)
		wantModule := ""
		switch s.mechanism {
		case "PLAIN":
			wantModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
		case "SCRAM-SHA-256", "SCRAM-SHA-512":
			wantModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
		default:
			return bad("%s=%q: minibroker's mirror speaks PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512", cfgSASLMechanism, mech)
		}
		jaas, hasJaas := settings[cfgSASLJaasConfig]
		_, hasUser := settings[cfgSASLUsername]
		_, hasPass := settings[cfgSASLPassword]
		switch {
		case hasJaas && (hasUser || hasPass):
			return bad("give either %s or %s and %s, not both", cfgSASLJaasConfig, cfgSASLUsername, cfgSASLPassword)
		case hasJaas:
			e, err := config.ParseJAAS(jaas)
			if err != nil {
				return bad("%s: %v", cfgSASLJaasConfig, err)
			}
			if e.LoginModule != wantModule {
				return bad("%s: %s needs the login module %s", cfgSASLJaasConfig, s.mechanism, wantModule)
			}
			for k := range e.Options {
				if k != "username" && k != "password" {
					return bad("%s: option %q is not supported (only username and password)", cfgSASLJaasConfig, k)
				}
			}
			s.username, s.password = e.Options["username"], e.Options["password"]
		case hasUser || hasPass:
			s.username, s.password = settings[cfgSASLUsername], settings[cfgSASLPassword]
		default:
			return bad("%s needs credentials: %s, or %s and %s", s.protocol, cfgSASLJaasConfig, cfgSASLUsername, cfgSASLPassword)
		}
		if s.username == "" || s.password == "" {
			return bad("%s needs a non-empty username and password", s.mechanism)
		}
	}

	if s.usesTLS() {
		for _, k := range []string{cfgTruststoreType, cfgKeystoreType} {
			if v, ok := get(k); ok && !strings.EqualFold(v, "PEM") {
				return bad("%s=%q: only PEM is supported", k, v)
			}
		}
		s.truststore, _ = get(cfgTruststoreLoc)
		s.keystore, _ = get(cfgKeystoreLoc)
		s.truststoreCerts, s.keystoreKey, s.keystoreChain = settings[cfgTruststoreCerts], settings[cfgKeystoreKey], settings[cfgKeystoreChain]
		s.keyPassword = settings[cfgKeyPassword] // kept as given: a password may end in a space
		if v, ok := get(cfgEndpointIdent); ok {
			switch strings.ToLower(v) {
			case "https":
			case "":
				s.verifyHostname = false
			default:
				return bad("%s=%q: want https, or empty to skip the host name check", cfgEndpointIdent, v)
			}
		}
		if _, err := s.tlsConfig(); err != nil {
			return sourceSecurity{}, fmt.Errorf("%w: source config %w", ErrBadRequest, err)
		}
	}
	return s, nil
}

// kgoOpts are the client options the security settings add. dial, when
// set, makes the TCP connections (kgo takes either a Dialer or a TLS
// config, so TLS is then layered on dial's connections here, with the
// host name kgo would give it).
func (s sourceSecurity) kgoOpts(dial func(ctx context.Context, network, host string) (net.Conn, error), timeout time.Duration) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	var tc *tls.Config
	if s.usesTLS() {
		var err error
		if tc, err = s.tlsConfig(); err != nil {
			return nil, err
		}
	}
	switch {
	case dial != nil && tc != nil:
		opts = append(opts, kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
			c := tc.Clone()
			if c.ServerName == "" {
				server, _, err := net.SplitHostPort(host)
				if err != nil {
					return nil, err
				}
				c.ServerName = server
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			raw, err := dial(ctx, network, host)
			if err != nil {
				return nil, err
			}
			conn := tls.Client(raw, c)
			if err := conn.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, err
			}
			return conn, nil
		}))
	case dial != nil:
		opts = append(opts, kgo.Dialer(dial))
	case tc != nil:
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if s.usesSASL() {
		var mech sasl.Mechanism
		switch s.mechanism {
		case "PLAIN":
			mech = plain.Auth{User: s.username, Pass: s.password}.AsMechanism()
		case "SCRAM-SHA-256":
			mech = scram.Auth{User: s.username, Pass: s.password}.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			mech = scram.Auth{User: s.username, Pass: s.password}.AsSha512Mechanism()
		}
		opts = append(opts, kgo.SASL(mech))
	}
	return opts, nil
}

// tlsConfig reads the PEM files. kgo sets ServerName to the dialled host
// when it is empty, so the host name is checked unless verifyHostname is
// off; then the chain is still verified against the trusted CAs, as
// Kafka does with an empty ssl.endpoint.identification.algorithm.
func (s sourceSecurity) tlsConfig() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	// The broker's listeners' loaders (internal/security); their errors
	// name the setting and never quote a key or a password.
	pool, err := security.LoadTrustPool(s.truststore, s.truststoreCerts)
	if err != nil {
		return nil, err
	}
	c.RootCAs = pool
	cert, err := security.LoadKeystore(s.keystore, s.keystoreKey, s.keystoreChain, s.keyPassword)
	if err != nil {
		return nil, err
	}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	if !s.verifyHostname {
		roots := c.RootCAs
		c.InsecureSkipVerify = true // only the host name check is skipped:
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the source sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, ic := range cs.PeerCertificates[1:] {
				inter.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			if err != nil {
				return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
			}
			return nil
		}
	}
	return c, nil
}

// isSecurityFailure reports whether the source refused the mirror's
// credentials or certificate, or the mirror refused the source's: the
// failures that retrying with the same settings cannot cure (Kafka's
// clients treat AuthenticationException as fatal too).
func isSecurityFailure(err error) bool {
	if err == nil {
		return false
	}
	for _, ke := range []error{kerr.SaslAuthenticationFailed, kerr.UnsupportedSaslMechanism, kerr.IllegalSaslState} {
		if errors.Is(err, ke) {
			return true
		}
	}
	var cve *tls.CertificateVerificationError
	var uae x509.UnknownAuthorityError
	var he x509.HostnameError
	var cie x509.CertificateInvalidError
	var alert tls.AlertError
	var notTLS tls.RecordHeaderError // SSL to a port that does not speak it
	return errors.As(err, &cve) || errors.As(err, &uae) || errors.As(err, &he) || errors.As(err, &cie) ||
		errors.As(err, &alert) || errors.As(err, &notTLS)
}

// cleanSourceConfig copies settings with their names trimmed (values are
// kept as given: a password may end in a space); nil when empty.
func cleanSourceConfig(settings map[string]string) map[string]string {
	if len(settings) == 0 {
		return nil
	}
	out := make(map[string]string, len(settings))
	for k, v := range settings {
		out[strings.TrimSpace(k)] = v
	}
	return out
}
