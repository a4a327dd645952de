package broker

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/security/certtest"
)

const testToken = "0123456789abcdef0123456789abcdef"

// startHTTPBroker serves a broker with faults.enable and an HTTP listener
// on 127.0.0.1; seams adjust it before it opens (tests only).
func startHTTPBroker(t *testing.T, opts Options, seams func(*Broker), sets ...string) *Broker {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = t.TempDir(), "127.0.0.1:0", "127.0.0.1:0"
	for _, kv := range append([]string{"faults.enable=true"}, sets...) {
		if err := cfg.SetPair(kv); err != nil {
			t.Fatal(err)
		}
	}
	opts.Config = cfg
	b, err := newBroker(opts, seams)
	if err != nil {
		t.Fatal(err)
	}
	b.Serve()
	t.Cleanup(func() { closeBroker(t, b) })
	return b
}

func call(t *testing.T, hc *http.Client, method, url, body string, headers map[string]string) (int, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header
}

var jsonHeaders = map[string]string{"Content-Type": "application/json", AdminHeader: "test"}

func withHeaders(extra map[string]string) map[string]string {
	h := map[string]string{}
	for k, v := range jsonHeaders {
		h[k] = v
	}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

const dropFault = `{"kind":"drop","count":1}`

// A token file authenticates: no token 401 (with WWW-Authenticate), a
// wrong one 403, the right one 200/201 and the action is logged with the
// file's principal; /metrics and /healthz stay open unless
// admin.metrics.auth.required; the file is re-read when it changes.
// Negative control: without admin.token.file the same requests succeed.
func TestAdminAPITokenAuth(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "admin.token")
	if err := os.WriteFile(tokenFile, []byte("User:ops "+testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	b := startHTTPBroker(t, Options{Logger: zap.New(core)}, nil, "admin.token.file="+tokenFile)
	base := "http://" + b.HTTPAddr()
	hc := http.DefaultClient
	code, hdr := call(t, hc, "POST", base+"/v1/faults", dropFault, jsonHeaders)
	if code != http.StatusUnauthorized || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("no token: HTTP %d, WWW-Authenticate %q", code, hdr.Get("WWW-Authenticate"))
	}
	if code, _ := call(t, hc, "POST", base+"/v1/faults", dropFault, withHeaders(map[string]string{"Authorization": "Bearer " + testToken + "x"})); code != http.StatusForbidden {
		t.Fatalf("wrong token: HTTP %d", code)
	}
	if code, _ := call(t, hc, "GET", base+"/v1/faults", "", map[string]string{"Authorization": "Bearer nope"}); code != http.StatusForbidden {
		t.Fatalf("wrong token on a read: HTTP %d", code)
	}
	if n := len(b.Faults().List()); n != 0 {
		t.Fatalf("%d faults set without the token", n)
	}
	// The token alone (no X-Minibroker-Admin) authorizes a JSON call.
	auth := map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json"}
	if code, _ := call(t, hc, "POST", base+"/v1/faults", dropFault, auth); code != http.StatusCreated {
		t.Fatalf("right token: HTTP %d", code)
	}
	if logs.FilterMessage("admin request").FilterField(zap.String("principal", "User:ops")).Len() != 1 {
		t.Fatalf("the action is not logged with its principal: %v", logs.FilterMessage("admin request").All())
	}
	for _, p := range []string{"/metrics", "/healthz"} {
		if code, _ := call(t, hc, "GET", base+p, "", nil); code != http.StatusOK {
			t.Fatalf("%s without a token: HTTP %d", p, code)
		}
	}
	// Rotation: the old token stops working, the new one works.
	newToken := strings.Repeat("n", 40)
	if err := os.WriteFile(tokenFile, []byte(newToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		old, _ := call(t, hc, "GET", base+"/v1/faults", "", map[string]string{"Authorization": "Bearer " + testToken})
		cur, _ := call(t, hc, "GET", base+"/v1/faults", "", map[string]string{"Authorization": "Bearer " + newToken})
		if old == http.StatusForbidden && cur == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("token file not re-read: old token %d, new %d", old, cur)
		}
		time.Sleep(100 * time.Millisecond)
	}

	locked := startHTTPBroker(t, Options{}, nil, "admin.token.file="+tokenFile, "admin.metrics.auth.required=true")
	if code, _ := call(t, hc, "GET", "http://"+locked.HTTPAddr()+"/metrics", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("/metrics with admin.metrics.auth.required: HTTP %d", code)
	}
	if code, _ := call(t, hc, "GET", "http://"+locked.HTTPAddr()+"/metrics", "", map[string]string{"Authorization": "Bearer " + newToken}); code != http.StatusOK {
		t.Fatalf("/metrics with the token: HTTP %d", code)
	}

	// Negative control: authentication off.
	open := startHTTPBroker(t, Options{}, nil)
	if code, _ := call(t, hc, "POST", "http://"+open.HTTPAddr()+"/v1/faults", dropFault, jsonHeaders); code != http.StatusCreated {
		t.Fatalf("negative control, no token: HTTP %d", code)
	}
	if code, _ := call(t, hc, "POST", "http://"+open.HTTPAddr()+"/v1/faults", dropFault, withHeaders(map[string]string{"Authorization": "Bearer nope"})); code != http.StatusCreated {
		t.Fatalf("negative control, wrong token: HTTP %d", code)
	}
}

// Browser requests are refused: a cross-origin text/plain form post, a
// cross-site Sec-Fetch-Site, JSON without the custom header, text/plain
// with it, and a DNS-rebinding Host; no answer carries CORS headers.
// Negative control: with the rules removed (the seam), the cross-origin
// form post sets a fault.
func TestAdminAPIRefusesCrossOrigin(t *testing.T) {
	b := startHTTPBroker(t, Options{}, nil)
	url := "http://" + b.HTTPAddr() + "/v1/faults"
	form := map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}
	for _, c := range []struct {
		what    string
		headers map[string]string
		want    int
	}{
		{"cross-origin form post", form, http.StatusForbidden},
		{"cross-origin JSON with the header", withHeaders(map[string]string{"Origin": "http://evil.example"}), http.StatusForbidden},
		{"null origin", withHeaders(map[string]string{"Origin": "null"}), http.StatusForbidden},
		{"Sec-Fetch-Site cross-site", withHeaders(map[string]string{"Sec-Fetch-Site": "cross-site"}), http.StatusForbidden},
		{"JSON without the header", map[string]string{"Content-Type": "application/json"}, http.StatusForbidden},
		{"text/plain with the header", map[string]string{"Content-Type": "text/plain", AdminHeader: "x"}, http.StatusUnsupportedMediaType},
		{"DNS rebinding", withHeaders(map[string]string{"Host": "evil.example:9644"}), http.StatusForbidden},
	} {
		code, hdr := call(t, http.DefaultClient, "POST", url, dropFault, c.headers)
		if code != c.want {
			t.Errorf("%s: HTTP %d, want %d", c.what, code, c.want)
		}
		if v := hdr.Get("Access-Control-Allow-Origin"); v != "" {
			t.Errorf("%s: Access-Control-Allow-Origin %q", c.what, v)
		}
	}
	if code, hdr := call(t, http.DefaultClient, "OPTIONS", url, "", map[string]string{"Origin": "http://evil.example",
		"Access-Control-Request-Method": "POST"}); code < 400 || hdr.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight: HTTP %d, Access-Control-Allow-Origin %q", code, hdr.Get("Access-Control-Allow-Origin"))
	}
	if n := len(b.Faults().List()); n != 0 {
		t.Fatalf("%d faults set by browser requests", n)
	}
	same := withHeaders(map[string]string{"Origin": "http://" + b.HTTPAddr(), "Sec-Fetch-Site": "same-origin"})
	if code, _ := call(t, http.DefaultClient, "POST", url, dropFault, same); code != http.StatusCreated {
		t.Fatalf("same-origin JSON with the header: HTTP %d", code)
	}

	ungated := startHTTPBroker(t, Options{}, func(b *Broker) { b.knobs.skipAdminBrowserChecks = true })
	if code, _ := call(t, http.DefaultClient, "POST", "http://"+ungated.HTTPAddr()+"/v1/faults", dropFault, form); code != http.StatusCreated {
		t.Fatalf("negative control: the cross-origin form post got HTTP %d", code)
	}
	if n := len(ungated.Faults().List()); n != 1 {
		t.Fatalf("negative control: %d faults", n)
	}
}

type denyAlter struct{ principal string }

func (d denyAlter) AuthorizeCluster(principal, _, op string) bool {
	return !(principal == d.principal && op == opAlter)
}

// An HTTPS admin listener with ssl.client.auth=required authenticates a
// client certificate as User:<subject DN>; a client without one cannot
// connect; the authorizer's CLUSTER ALTER denial is 403 while DESCRIBE
// passes. With authorizer.class.name the ACLs decide: a principal without
// ACLs is denied, a super user allowed.
func TestAdminAPIHTTPSClientCert(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, "admin-ca")
	ks := certtest.WriteFile(t, dir, "server.pem", ca.Server(t, "broker").Keystore())
	trust := certtest.WriteFile(t, dir, "ca.pem", ca.PEM)
	ops := ca.Client(t, "ops", "sre", "example")
	sets := []string{"admin.listener.ssl.keystore.location=" + ks, "admin.listener.ssl.truststore.location=" + trust,
		"admin.listener.ssl.client.auth=required"}
	principal := "User:" + ops.Cert.Subject.String()
	core, logs := observer.New(zap.InfoLevel)
	b := startHTTPBroker(t, Options{Logger: zap.New(core), AdminAuthorizer: denyAlter{principal}}, nil, sets...)
	url := "https://" + b.HTTPAddr() + "/v1/faults"
	client := func(leaf *certtest.Leaf) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: ca.ClientTLS(t, leaf)}}
	}
	withCert := client(ops)
	if code, _ := call(t, withCert, "GET", url, "", nil); code != http.StatusOK {
		t.Fatalf("describe with a client certificate: HTTP %d", code)
	}
	if logs.FilterMessage("admin request").FilterField(zap.String("principal", principal)).Len() != 1 {
		t.Fatalf("not logged as %s: %v", principal, logs.FilterMessage("admin request").All())
	}
	if code, _ := call(t, withCert, "POST", url, dropFault, jsonHeaders); code != http.StatusForbidden {
		t.Fatalf("ALTER denied by the authorizer: HTTP %d", code)
	}
	if n := len(b.Faults().List()); n != 0 {
		t.Fatalf("%d faults set by a denied principal", n)
	}
	req, _ := http.NewRequest("GET", url, nil)
	if resp, err := client(nil).Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("no client certificate: HTTP %d, want a refused handshake", resp.StatusCode)
	}

	// The ACLs: no ACL for ops, so ALTER and DESCRIBE are denied; as a
	// super user everything is allowed.
	acls := startHTTPBroker(t, Options{}, nil, append(sets, "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer")...)
	aclURL := "https://" + acls.HTTPAddr() + "/v1/faults"
	if code, _ := call(t, withCert, "GET", aclURL, "", nil); code != http.StatusForbidden {
		t.Fatalf("describe without an ACL: HTTP %d", code)
	}
	super := startHTTPBroker(t, Options{}, nil, append(sets, "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users="+principal)...)
	if code, _ := call(t, withCert, "POST", "https://"+super.HTTPAddr()+"/v1/faults", dropFault, jsonHeaders); code != http.StatusCreated {
		t.Fatalf("a super user's ALTER: HTTP %d", code)
	}
}
