package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/minibrokertest"
)

// wait mirror asks the admin API with the token of --admin-token-file;
// without it a broker with admin.token.file answers 401 and the wait
// reports it when it gives up.
func TestWaitMirrorSendsToken(t *testing.T) {
	token := strings.Repeat("t", 40)
	file := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(file, []byte("User:ops "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := minibrokertest.Start(t, minibrokertest.Topic("demo", 1))
	b := minibrokertest.Start(t, minibrokertest.HTTP(), minibrokertest.Set("admin.token.file", file))
	b.Mirror("from-a", a.Addr()).Start("demo")

	wait := func(args ...string) (string, error) {
		cmd := newWaitCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"mirror", "--admin", b.HTTPAddr(), "--name", "from-a", "--state", "MIRRORING"}, args...))
		err := cmd.Execute()
		return out.String(), err
	}
	if out, err := wait("--timeout", "1s"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("without the token: %v\n%s", err, out)
	}
	if out, err := wait("--timeout", "30s", "--admin-token-file", file); err != nil {
		t.Fatalf("with the token: %v\n%s", err, out)
	}
}
