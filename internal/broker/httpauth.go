package broker

// Authentication, authorization and cross-origin refusal of the HTTP
// admin API (docs/ADMIN_API.md, "Securing the admin API").
//
// Who: a bearer token from admin.token.file (Authorization: Bearer …), or
// the verified client certificate of an HTTPS admin listener
// (admin.listener.ssl.*; principal User:<subject DN>, as Kafka's default
// ssl.principal.mapping.rules). With neither configured the API is
// unauthenticated (principal User:ANONYMOUS) and the HTTP listener must be
// on a loopback address unless admin.allow.unauthenticated.remote.
//
// What: every admin route is a CLUSTER operation: GET (list, describe) is
// DESCRIBE, anything else (create, start, stop, pause, resume, alter,
// delete, faults) is ALTER, checked against the principal's ACLs when
// authorizer.class.name is set (Options.AdminAuthorizer replaces them).
// With no authorizer an authenticated principal may do both; every action
// is logged with its principal.
//
// Browsers: a request with an Origin other than the Host it was sent to,
// or a Sec-Fetch-Site other than same-origin or none, is refused (403);
// no answer carries CORS headers, so a preflight fails. A state-changing
// request must be Content-Type: application/json (415 otherwise) and
// carry the bearer token or the X-Minibroker-Admin header (403), which a
// cross-site form cannot send. With authentication off the Host must be
// an IP address or localhost (a DNS-rebinding page names its own host).
//
// Codes: no credentials 401 (WWW-Authenticate: Bearer), a wrong token 403,
// an authenticated principal denied by the authorizer 403.

import (
	"crypto/tls"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/security"
)

// AdminHeader is the header a state-changing admin request sends when it
// is not authenticated by a bearer token (a browser form cannot set it).
const AdminHeader = "X-Minibroker-Admin"

// Cluster operations an admin route needs.
const (
	opDescribe = "DESCRIBE"
	opAlter    = "ALTER"
)

// ClusterAuthorizer decides whether principal, connected from host, may
// perform op (ALTER or DESCRIBE) on the CLUSTER resource. The ACL
// authorizer implements it; nil allows every authenticated principal.
type ClusterAuthorizer interface {
	AuthorizeCluster(principal, host, op string) bool
}

// adminAuth is the HTTP listener's security, built at start-up.
type adminAuth struct {
	tokens        *security.TokenFile // nil: no token authentication
	certAuth      bool                // HTTPS with client.auth requested or required
	tls           *tls.Config         // nil: plain HTTP
	metricsNeedID bool                // admin.metrics.auth.required
	authorizer    ClusterAuthorizer
	logger        *zap.Logger

	// skipBrowserChecks serves admin routes without the cross-origin,
	// content-type and header rules: the seam for their negative control.
	skipBrowserChecks bool
}

// on reports whether the admin API authenticates its clients.
func (a *adminAuth) on() bool { return a.tokens != nil || a.certAuth }

// newAdminAuth reads the admin.* settings.
func newAdminAuth(cfg config.Config, logger *zap.Logger) (*adminAuth, error) {
	a := &adminAuth{logger: logger, metricsNeedID: cfg.Bool("admin.metrics.auth.required")}
	if f := cfg.String("admin.token.file"); f != "" {
		t, err := security.OpenTokenFile(f, logger)
		if err != nil {
			return nil, err
		}
		a.tokens = t
	}
	clientAuth := cfg.String("admin.listener.ssl.client.auth")
	if ks := cfg.String("admin.listener.ssl.keystore.location"); ks != "" {
		tc, _, err := security.ServerTLS(security.TLSSettings{Listener: "admin", KeystoreLocation: ks,
			KeyPassword: cfg.String("admin.listener.ssl.key.password"), ClientAuth: clientAuth,
			TruststoreLocation: cfg.String("admin.listener.ssl.truststore.location")}, logger)
		if err != nil {
			return nil, fmt.Errorf("admin.listener.ssl: %w", err)
		}
		a.tls = tc
		a.certAuth = clientAuth == "requested" || clientAuth == "required"
	} else if clientAuth != "none" && clientAuth != "" {
		return nil, fmt.Errorf("admin.listener.ssl.client.auth=%s needs admin.listener.ssl.keystore.location (an HTTPS admin listener)", clientAuth)
	}
	if a.metricsNeedID && !a.on() {
		return nil, fmt.Errorf("admin.metrics.auth.required needs admin.token.file or an admin listener with ssl.client.auth")
	}
	return a, nil
}

// checkBind refuses an unauthenticated admin API on a non-loopback
// address unless admin.allow.unauthenticated.remote, as Kafka refuses an
// advertised address that cannot work: the operator must say so.
func (a *adminAuth) checkBind(addr net.Addr, allowRemote bool) error {
	tcp, ok := addr.(*net.TCPAddr)
	if a.on() || !ok || tcp.IP.IsLoopback() || allowRemote {
		return nil
	}
	return fmt.Errorf("the HTTP listener %s is not on a loopback address and the admin API has no authentication "+
		"(anyone who reaches it could stop a mirror: a failover): set admin.token.file, or an HTTPS admin listener with "+
		"admin.listener.ssl.client.auth, or bind --http-listen to 127.0.0.1, or set admin.allow.unauthenticated.remote=true "+
		"to accept this", tcp)
}

// authenticate is r's principal. ok false: status (401 or 403) and why.
func (a *adminAuth) authenticate(r *http.Request) (principal string, bearer bool, status int, why string) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(h, " ")
		if a.tokens == nil {
			if !a.on() {
				return protocol.AnonymousPrincipal, false, 0, "" // authentication off: the header is ignored
			}
			return "", false, http.StatusForbidden, "bearer tokens are not accepted (no admin.token.file)"
		}
		if !strings.EqualFold(scheme, "Bearer") {
			return "", false, http.StatusForbidden, "the Authorization header must be Bearer <token>"
		}
		p, ok := a.tokens.Principal(strings.TrimSpace(tok))
		if !ok {
			return "", false, http.StatusForbidden, "wrong token"
		}
		return p, true, 0, ""
	}
	if a.certAuth && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.PeerCertificates) > 0 {
		return "User:" + r.TLS.PeerCertificates[0].Subject.String(), false, 0, ""
	}
	if a.on() {
		return "", false, http.StatusUnauthorized, "authentication required: Authorization: Bearer <token> or a client certificate"
	}
	return protocol.AnonymousPrincipal, false, 0, ""
}

// crossOrigin says why r looks like a browser's cross-site request, or "".
func crossOrigin(r *http.Request, authOn bool) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return "cross-site request refused (Sec-Fetch-Site: " + site + ")"
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			return "cross-origin request refused (Origin " + o + ")"
		}
	}
	if !authOn {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if net.ParseIP(host) == nil && !strings.EqualFold(host, "localhost") {
			return "without admin authentication the Host must be an IP address or localhost (got " + r.Host + ")"
		}
	}
	return ""
}

func stateChanging(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// guard wraps an admin route: browser rules, authentication, the
// CLUSTER op authorization, and a log line with the principal.
func (a *adminAuth) guard(pattern string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := opDescribe
		if stateChanging(r.Method) {
			op = opAlter
		}
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		deny := func(status int, principal, why string) {
			a.logger.Warn("admin request refused", zap.String("method", r.Method), zap.String("path", r.URL.Path),
				zap.String("principal", principal), zap.String("remote", r.RemoteAddr), zap.Int("status", status), zap.String("reason", why))
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="minibroker-admin"`)
			}
			writeAdminErr(w, status, why)
		}
		if !a.skipBrowserChecks {
			if why := crossOrigin(r, a.on()); why != "" {
				deny(http.StatusForbidden, "", why)
				return
			}
		}
		principal, bearer, status, why := a.authenticate(r)
		if status != 0 {
			deny(status, "", why)
			return
		}
		if stateChanging(r.Method) && !a.skipBrowserChecks {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				deny(http.StatusUnsupportedMediaType, principal, "a state-changing admin request must be Content-Type: application/json")
				return
			}
			if !bearer && r.Header.Get(AdminHeader) == "" {
				deny(http.StatusForbidden, principal, "a state-changing admin request needs the bearer token or the "+AdminHeader+" header")
				return
			}
		}
		if a.authorizer != nil && !a.authorizer.AuthorizeCluster(principal, host, op) {
			deny(http.StatusForbidden, principal, principal+" is not authorized to "+op+" the CLUSTER")
			return
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		a.logger.Info("admin request", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.String("route", pattern),
			zap.String("principal", principal), zap.String("operation", "CLUSTER "+op), zap.String("remote", r.RemoteAddr),
			zap.Int("status", rec.status))
	})
}

// guardRead wraps /metrics and /healthz: open unless
// admin.metrics.auth.required.
func (a *adminAuth) guardRead(h http.Handler) http.Handler {
	if !a.metricsNeedID {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, status, why := a.authenticate(r); status != 0 {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="minibroker-admin"`)
			}
			writeAdminErr(w, status, why)
			return
		}
		h.ServeHTTP(w, r)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func writeAdminErr(w http.ResponseWriter, code int, msg string) {
	faultReply(w, code, map[string]string{"error": msg})
}
