package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/internal/mirror"
)

// wait mirror sends the token of --admin-token-file; without it a broker
// with admin.token.file answers 401 and the wait reports it.
func TestMirrorStatusSendsToken(t *testing.T) {
	token := strings.Repeat("t", 40)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(mirror.Status{Name: "m"})
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(file, []byte("User:ops "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.URL, "http://")
	if _, err := mirrorStatus(srv.Client(), addr, "", "m"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("without the token: %v", err)
	}
	st, err := mirrorStatus(srv.Client(), addr, file, "m")
	if err != nil || st.Name != "m" {
		t.Fatalf("with the token: %+v %v", st, err)
	}
}
