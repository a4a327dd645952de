package security

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// MinTokenLength is the shortest bearer token a token file may hold.
const MinTokenLength = 32

// DefaultTokenPrincipal is the principal of a token given without one.
const DefaultTokenPrincipal = "User:admin"

// TokenFile holds the bearer tokens of the HTTP admin API, read from a
// file (admin.token.file) and re-read when it changes (checked at most
// once per reloadCheckInterval, at a request). Format, one entry a line:
//
//	TOKEN                 principal User:admin
//	PRINCIPAL TOKEN       e.g. User:ops 5f0c…
//	# a comment
//
// A file that cannot be read or parsed at a reload keeps the previous
// tokens (and is logged); at start-up it is an error.
type TokenFile struct {
	path   string
	logger *zap.Logger

	mu        sync.Mutex // guards the fields below
	tokens    []tokenEntry
	modTime   time.Time
	size      int64
	checkedAt time.Time
}

type tokenEntry struct {
	principal string
	token     []byte
}

// OpenTokenFile reads path; it fails on an unreadable or empty file or a
// token shorter than MinTokenLength.
func OpenTokenFile(path string, logger *zap.Logger) (*TokenFile, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	t := &TokenFile{path: path, logger: logger}
	if err := t.load(); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *TokenFile) load() error {
	st, err := os.Stat(t.path)
	if err != nil {
		return fmt.Errorf("admin.token.file: %w", err)
	}
	raw, err := os.ReadFile(t.path)
	if err != nil {
		return fmt.Errorf("admin.token.file: %w", err)
	}
	entries, err := parseTokens(raw)
	if err != nil {
		return fmt.Errorf("admin.token.file %s: %w", t.path, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		t.logger.Warn("admin.token.file is readable by other users: chmod 600 it", zap.String("file", t.path),
			zap.String("mode", st.Mode().Perm().String()))
	}
	t.mu.Lock()
	t.tokens, t.modTime, t.size, t.checkedAt = entries, st.ModTime(), st.Size(), time.Now()
	t.mu.Unlock()
	principals := make([]string, len(entries))
	for i, e := range entries {
		principals[i] = e.principal
	}
	t.logger.Info("admin tokens read", zap.String("file", t.path), zap.Strings("principals", principals))
	return nil
}

func parseTokens(raw []byte) ([]tokenEntry, error) {
	var out []tokenEntry
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		e := tokenEntry{principal: DefaultTokenPrincipal}
		switch len(f) {
		case 1:
			e.token = []byte(f[0])
		case 2:
			if !strings.HasPrefix(f[0], "User:") || len(f[0]) == len("User:") {
				return nil, fmt.Errorf("line %d: the principal must be User:<name>", n)
			}
			e.principal, e.token = f[0], []byte(f[1])
		default:
			return nil, fmt.Errorf("line %d: want TOKEN or PRINCIPAL TOKEN", n)
		}
		if len(e.token) < MinTokenLength {
			return nil, fmt.Errorf("line %d: a token must have at least %d characters", n, MinTokenLength)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no token in the file")
	}
	return out, nil
}

// Principal is the principal of token, or false if no entry has it. Every
// entry is compared in constant time.
func (t *TokenFile) Principal(token string) (string, bool) {
	t.maybeReload()
	t.mu.Lock()
	entries := t.tokens
	t.mu.Unlock()
	found := ""
	for _, e := range entries {
		if subtle.ConstantTimeCompare(e.token, []byte(token)) == 1 && found == "" {
			found = e.principal
		}
	}
	return found, found != ""
}

func (t *TokenFile) maybeReload() {
	t.mu.Lock()
	if time.Since(t.checkedAt) < reloadCheckInterval {
		t.mu.Unlock()
		return
	}
	t.checkedAt = time.Now()
	modTime, size := t.modTime, t.size
	t.mu.Unlock()
	st, err := os.Stat(t.path)
	if err != nil || (st.ModTime().Equal(modTime) && st.Size() == size) {
		return
	}
	if err := t.load(); err != nil {
		t.logger.Warn("admin.token.file changed but cannot be used: keeping the previous tokens", zap.Error(err))
		t.mu.Lock()
		t.modTime, t.size = st.ModTime(), st.Size()
		t.mu.Unlock()
	}
}

// ReadToken is the first token of a token file, for a client (the CLI's
// --admin-token-file).
func ReadToken(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	entries, err := parseTokens(raw)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return string(entries[0].token), nil
}
