package security

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdg-go/scram"

	"github.com/minibroker/minibroker/internal/vfs"
)

// scramExchange runs xdg-go/scram's client against the broker's SASL server
// and reports whether the server accepted the client's proof.
func scramExchange(t *testing.T, srv *SASLServer, mechanism, user, password string) (principal string, ok bool) {
	t.Helper()
	hash := scram.SHA512
	if mechanism == ScramSHA256 {
		hash = scram.SHA256
	}
	client, err := hash.NewClient(user, password, "")
	if err != nil {
		t.Fatal(err)
	}
	conv, err := srv.Start(mechanism)
	if err != nil {
		t.Fatal(err)
	}
	cc := client.NewConversation()
	msg, err := cc.Step("")
	if err != nil {
		t.Fatal(err)
	}
	for {
		reply, done, err := conv.Step([]byte(msg))
		if err != nil {
			return "", false
		}
		if msg, err = cc.Step(string(reply)); err != nil {
			t.Fatalf("client refused the server's message: %v", err)
		}
		if done {
			if !cc.Valid() {
				t.Fatal("the client did not verify the server's signature")
			}
			return conv.Principal(), true
		}
	}
}

// TestSCRAMServer: credentials stored with AddPassword authenticate over
// both mechanisms, survive a reopen of the store, and a wrong password,
// another mechanism's credential or an unknown user is refused. The store
// never holds the password.
func TestSCRAMServer(t *testing.T) {
	dir := t.TempDir()
	store, err := OpenScramStore(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.AddPassword(ScramSHA512, "alice", "alice-secret", 4096); err != nil {
		t.Fatal(err)
	}
	if err := store.AddPassword(ScramSHA256, "bob", "bob-secret", 8192); err != nil {
		t.Fatal(err)
	}
	store, err = OpenScramStore(vfs.Default, dir) // reopened from disk
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewSASLServer([]string{ScramSHA256, ScramSHA512}, nil, store)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := scramExchange(t, srv, ScramSHA512, "alice", "alice-secret"); !ok || p != "User:alice" {
		t.Fatalf("alice over SCRAM-SHA-512: %q %v", p, ok)
	}
	if p, ok := scramExchange(t, srv, ScramSHA256, "bob", "bob-secret"); !ok || p != "User:bob" {
		t.Fatalf("bob over SCRAM-SHA-256: %q %v", p, ok)
	}
	for _, c := range []struct{ mech, user, pass string }{
		{ScramSHA512, "alice", "wrong"},
		{ScramSHA256, "alice", "alice-secret"}, // no SHA-256 credential
		{ScramSHA512, "carol", "x"},
	} {
		if _, ok := scramExchange(t, srv, c.mech, c.user, c.pass); ok {
			t.Errorf("%s %s/%s accepted", c.mech, c.user, c.pass)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		if strings.Contains(string(raw), "alice-secret") || strings.Contains(string(raw), "bob-secret") {
			t.Fatalf("%s holds a password", f)
		}
	}
	if err := CheckIterations(ScramSHA512, 100); err == nil {
		t.Fatal("100 iterations accepted")
	}
}

// TestPlainServer: PLAIN checks the JAAS users, refuses a wrong password,
// an unknown user, a malformed message and an authorization id that is not
// the user.
func TestPlainServer(t *testing.T) {
	users := PlainUsersFromJAAS(map[string]string{"user_alice": "alice-secret", "username": "admin", "password": "x"})
	if len(users) != 1 || users["alice"] != "alice-secret" {
		t.Fatalf("users from JAAS: %v", users)
	}
	srv, err := NewSASLServer([]string{"PLAIN"}, users, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		msg string
		ok  bool
	}{
		{"\x00alice\x00alice-secret", true},
		{"alice\x00alice\x00alice-secret", true},
		{"\x00alice\x00wrong", false},
		{"\x00mallory\x00alice-secret", false},
		{"bob\x00alice\x00alice-secret", false},
		{"alice-secret", false},
	} {
		conv, _ := srv.Start("PLAIN")
		_, done, err := conv.Step([]byte(c.msg))
		if ok := err == nil && done; ok != c.ok {
			t.Errorf("%q: accepted %v, want %v (%v)", c.msg, ok, c.ok, err)
		}
		if c.ok && conv.Principal() != "User:alice" {
			t.Errorf("%q: principal %q", c.msg, conv.Principal())
		}
	}
	if _, err := NewSASLServer([]string{"GSSAPI"}, nil, nil); err == nil {
		t.Fatal("GSSAPI accepted")
	}
}

// TestTokenFile: tokens map to their principals, a wrong token maps to
// none, and a short token is refused when the file is opened.
func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("a", MinTokenLength)
	other := strings.Repeat("b", MinTokenLength)
	path := filepath.Join(dir, "tokens")
	if err := os.WriteFile(path, []byte(long+"\nUser:ops "+other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := OpenTokenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := tf.Principal(long); !ok || p != "User:admin" {
		t.Fatalf("bare token: %q %v", p, ok)
	}
	if p, ok := tf.Principal(other); !ok || p != "User:ops" {
		t.Fatalf("named token: %q %v", p, ok)
	}
	if _, ok := tf.Principal(strings.Repeat("c", MinTokenLength)); ok {
		t.Fatal("an unknown token was accepted")
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("tooshort\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenTokenFile(short, nil); err == nil {
		t.Fatal("a short token was accepted")
	}
}
