package security

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

const adminTestToken = "0123456789abcdef0123456789abcdef-ops"

// adminRequest sends an admin API request with the given headers and
// returns the status and body.
func adminRequest(t *testing.T, method, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// mirroringCluster starts a source with topic orders and a destination
// (with extra options) mirroring it; the mirror is driven in-process.
func mirroringCluster(t *testing.T, opts ...minibrokertest.Option) *minibrokertest.Cluster {
	t.Helper()
	src := minibrokertest.Start(t, minibrokertest.Topic("orders", 2))
	dst := minibrokertest.Start(t, append([]minibrokertest.Option{minibrokertest.HTTP()}, opts...)...)
	dst.Mirror("m", src.Addr()).Start("orders")
	itest.WaitMirror(t, dst, "m", "MIRRORING", func(st mirror.Status) bool { return allState(st, mirror.Mirroring) })
	return dst
}

func allState(st mirror.Status, want mirror.State) bool {
	if len(st.Partitions) == 0 {
		return false
	}
	for _, p := range st.Partitions {
		if p.State != want {
			return false
		}
	}
	return true
}

// With admin.token.file, a mirror stop (a failover) without a token is
// 401, with a wrong token 403, from a browser's cross-site form 403, and
// each leaves every partition MIRRORING; the right token stops it, and
// the CLI with --admin-token-file lists and describes it. Negative
// control: on a broker without admin.token.file the same request with the
// wrong token stops the mirror.
func TestAdminAPIDeniedStopLeavesMirroring(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(tokenFile, []byte("# ops\nUser:ops "+adminTestToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := mirroringCluster(t, minibrokertest.Set("admin.token.file", tokenFile))
	stop := "http://" + dst.HTTPAddr() + "/v1/mirrors/m/stop"
	json := map[string]string{"Content-Type": "application/json", "X-Minibroker-Admin": "test"}
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{}
		for k, v := range json {
			h[k] = v
		}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	for _, c := range []struct {
		what    string
		headers map[string]string
		want    int
	}{
		{"no token", json, http.StatusUnauthorized},
		{"wrong token", with(map[string]string{"Authorization": "Bearer " + strings.Repeat("x", 36)}), http.StatusForbidden},
		{"another scheme", with(map[string]string{"Authorization": "Basic " + adminTestToken}), http.StatusForbidden},
		{"cross-site form with the token", map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example",
			"Authorization": "Bearer " + adminTestToken}, http.StatusForbidden},
	} {
		code, body := adminRequest(t, "POST", stop, `{"all_topics":true,"wait":true}`, c.headers)
		if code != c.want {
			t.Fatalf("%s: HTTP %d %s, want %d", c.what, code, body, c.want)
		}
		st, err := dst.Broker().Mirrors().Describe("m")
		if err != nil || !allState(st, mirror.Mirroring) {
			t.Fatalf("%s: the refused stop changed the mirror: %+v %v", c.what, st, err)
		}
	}
	// Reads need the token too; /metrics and /healthz do not.
	if code, _ := adminRequest(t, "GET", "http://"+dst.HTTPAddr()+"/v1/mirrors/m", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("describe without a token: HTTP %d", code)
	}
	for _, p := range []string{"/metrics", "/healthz"} {
		if code, _ := adminRequest(t, "GET", "http://"+dst.HTTPAddr()+p, "", nil); code != http.StatusOK {
			t.Fatalf("%s without a token: HTTP %d", p, code)
		}
	}
	out, err := itest.RunCLI(t, "mirror", "describe", "m", "--admin", dst.HTTPAddr())
	if err == nil || !strings.Contains(out, "401") {
		t.Fatalf("CLI without --admin-token-file: %v %s", err, out)
	}
	out, err = itest.RunCLI(t, "mirror", "describe", "m", "--admin", dst.HTTPAddr(), "--admin-token-file", tokenFile)
	if err != nil || !strings.Contains(out, "MIRRORING") {
		t.Fatalf("CLI with --admin-token-file: %v %s", err, out)
	}
	out, err = itest.RunCLI(t, "mirror", "stop", "m", "--all-topics", "--wait", "--admin", dst.HTTPAddr(), "--admin-token-file", tokenFile)
	if err != nil || !strings.Contains(out, "STOPPED") {
		t.Fatalf("CLI stop with --admin-token-file: %v %s", err, out)
	}

	// Negative control: authentication off, the wrong token is ignored
	// and the stop is a failover.
	open := mirroringCluster(t)
	code, body := adminRequest(t, "POST", "http://"+open.HTTPAddr()+"/v1/mirrors/m/stop", `{"all_topics":true,"wait":true}`,
		with(map[string]string{"Authorization": "Bearer " + strings.Repeat("x", 36)}))
	if code != http.StatusOK {
		t.Fatalf("negative control: HTTP %d %s", code, body)
	}
	if st, _ := open.Broker().Mirrors().Describe("m"); !allState(st, mirror.Stopped) {
		t.Fatalf("negative control: the unauthenticated stop did not stop the mirror: %+v", st)
	}
}
