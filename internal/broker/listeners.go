package broker

// Listeners, as Kafka names them: `listeners`, `advertised.listeners`,
// `listener.security.protocol.map` and listener.name.<name>.* overrides
// (internal/config/listeners.go parses them). Each listener binds its own
// socket; a client is answered (Metadata, FindCoordinator,
// DescribeCluster) with the advertised address of the listener it
// connected through, as Kafka does.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/security"
)

// boundListener is one open Kafka listener.
type boundListener struct {
	spec    config.ListenerSpec
	ln      net.Listener
	proto   *protocol.Listener
	advHost string
	advPort int32
}

// ListenerAddr describes a listener: name, security protocol, the address
// it is bound to and the one it advertises.
type ListenerAddr struct {
	Name, Protocol, Bound, Advertised string
}

// openListeners binds every configured listener and builds how each is
// secured; on error, those already bound are closed.
func (b *Broker) openListeners() (err error) {
	specs, err := b.cfg.Listeners()
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			b.closeListeners()
		}
	}()
	for _, spec := range specs {
		pl, err := b.securityFor(spec)
		if err != nil {
			return fmt.Errorf("listener %s: %w", spec.Name, err)
		}
		ln, err := net.Listen("tcp", spec.Addr)
		if err != nil {
			return fmt.Errorf("kafka listener %s: %w", spec.Name, err)
		}
		bl := &boundListener{spec: spec, ln: ln, proto: pl}
		b.listeners = append(b.listeners, bl)
		if bl.advHost, bl.advPort, err = advertisedAddr(spec.Advertised, spec.Addr, ln.Addr().String()); err != nil {
			return fmt.Errorf("listener %s: %w", spec.Name, err)
		}
		if hostOf(spec.Advertised, spec.Addr) == "" {
			b.logger.Info("listener has no host: advertising the host name, as Kafka does", zap.String("listener", spec.Name),
				zap.String("advertised", net.JoinHostPort(bl.advHost, strconv.Itoa(int(bl.advPort)))))
		}
	}
	b.advHost, b.advPort = b.listeners[0].advHost, b.listeners[0].advPort
	return nil
}

// closeListeners closes listeners not yet handed to the server.
func (b *Broker) closeListeners() {
	for _, l := range b.listeners {
		l.ln.Close()
	}
	b.listeners = nil
}

// advertisedAddr is the host and port a listener advertises: adv, or,
// when adv is empty, the address it listens at (listen, as configured);
// port 0 is the bound port (bound is the listener's real address). See
// advertisedHost for the host.
func advertisedAddr(adv, listen, bound string) (string, int32, error) {
	return advertisedAddrWith(adv, listen, bound, os.Hostname)
}

func advertisedAddrWith(adv, listen, bound string, hostname func() (string, error)) (string, int32, error) {
	configured := adv
	if adv == "" {
		adv = listen
	}
	host, port, err := net.SplitHostPort(adv)
	if err != nil {
		return "", 0, fmt.Errorf("advertised listener %q: %w", adv, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("advertised listener %q: bad port", adv)
	}
	if p == 0 { // listening on :0 — advertise the port the OS chose
		_, real, _ := net.SplitHostPort(bound)
		p, _ = strconv.Atoi(real)
	}
	host, err = advertisedHost(host, configured, hostname)
	if err != nil {
		return "", 0, err
	}
	return host, int32(p), nil
}

// hostOf is the host of the advertised address, else the bound one.
func hostOf(adv, bound string) string {
	if adv == "" {
		adv = bound
	}
	h, _, _ := net.SplitHostPort(adv)
	return h
}

// warnWildcardHTTP says when the HTTP listener (/metrics, /healthz and the
// admin API, which stops mirrors: a failover) is bound to every interface.
func (b *Broker) warnWildcardHTTP() {
	if b.httpLn == nil || b.httpAuth.on() {
		return
	}
	if a, ok := b.httpLn.Addr().(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		b.logger.Warn("the HTTP admin API is served on every interface, without authentication: anyone who reaches "+
			"this port can stop a mirror (a failover); set admin.token.file, or bind --http-listen to 127.0.0.1 or a private address",
			zap.String("http", a.String()))
	}
}

// errWildcardAdvertised is Kafka's refusal (KafkaConfig): an advertised
// address must be one a client can connect to.
var errWildcardAdvertised = errors.New("advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address")

// advertisedHost applies Kafka's rules to the host a listener advertises
// (its advertised address, else its bound one, whose host is the
// listener's, e.g. 0.0.0.0 from --listen 0.0.0.0:9092): a wildcard
// address (0.0.0.0, and :: where Kafka checks only 0.0.0.0) is refused at
// start-up, as Kafka refuses it, because every client would be sent to
// an address that is not the broker's (before, minibroker advertised
// 127.0.0.1: each remote client connected to its own host); an empty host
// (--listen :9092) is the machine's host name, as Kafka advertises the
// canonical host name.
func advertisedHost(host, configured string, hostname func() (string, error)) (string, error) {
	switch host {
	case "0.0.0.0", "::":
		if configured == "" {
			return "", fmt.Errorf("%w: the listener is bound to %s and has no advertised address: set --advertised-listener "+
				"(or advertised.listeners) to the host name or address clients reach this broker at", errWildcardAdvertised, host)
		}
		return "", fmt.Errorf("%w (%s)", errWildcardAdvertised, configured)
	case "":
		h, err := hostname()
		if err != nil || h == "" {
			return "", fmt.Errorf("the listener has no host and the host name is unknown (%v): set an advertised address", err)
		}
		return h, nil
	}
	return host, nil
}

// advertised is the address to give the client of r: its listener's.
func (b *Broker) advertised(r *protocol.Request) (string, int32) {
	if r != nil && r.Session != nil {
		name := r.Session.Listener()
		for _, l := range b.listeners {
			if l.spec.Name == name {
				return l.advHost, l.advPort
			}
		}
	}
	return b.advHost, b.advPort
}

// Listeners describes every Kafka listener, in configuration order.
func (b *Broker) Listeners() []ListenerAddr {
	out := make([]ListenerAddr, 0, len(b.listeners))
	for _, l := range b.listeners {
		out = append(out, ListenerAddr{Name: l.spec.Name, Protocol: l.spec.Protocol, Bound: l.ln.Addr().String(),
			Advertised: net.JoinHostPort(l.advHost, strconv.Itoa(int(l.advPort)))})
	}
	return out
}

// securityFor builds how a listener's connections are secured: its TLS
// configuration (ssl.*, overridable per listener) and SASL mechanisms.
func (b *Broker) securityFor(spec config.ListenerSpec) (*protocol.Listener, error) {
	pl := &protocol.Listener{Name: spec.Name, Protocol: spec.Protocol}
	get := func(name string) string { return b.cfg.ListenerString(spec.Name, name) }
	if spec.UsesTLS() {
		tlsCfg, _, err := security.ServerTLS(security.TLSSettings{
			Listener:               spec.Name,
			KeystoreLocation:       get("ssl.keystore.location"),
			KeystoreKey:            get("ssl.keystore.key"),
			KeystoreChain:          get("ssl.keystore.certificate.chain"),
			KeyPassword:            get("ssl.key.password"),
			TruststoreLocation:     get("ssl.truststore.location"),
			TruststoreCertificates: get("ssl.truststore.certificates"),
			ClientAuth:             get("ssl.client.auth"),
			Protocols:              config.SplitList(get("ssl.enabled.protocols")),
			CipherSuites:           config.SplitList(get("ssl.cipher.suites")),
		}, b.logger.Named("tls"))
		if err != nil {
			return nil, err
		}
		pl.TLS = tlsCfg
	}
	if spec.UsesSASL() {
		sasl, err := b.saslFor(spec)
		if err != nil {
			return nil, err
		}
		pl.SASL = sasl
		pl.MaxReceiveBeforeAuth = int32(b.cfg.ListenerInt64(spec.Name, "sasl.server.max.receive.size"))
		pl.ReauthAfter = time.Duration(b.cfg.ListenerInt64(spec.Name, "connections.max.reauth.ms")) * time.Millisecond
	}
	return pl, nil
}
