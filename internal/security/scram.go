package security

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/xdg-go/scram"

	"github.com/minibroker/minibroker/internal/vfs"
)

// SCRAM mechanisms, by Kafka's names, and the hashes they use.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// scramMinIterations and scramMaxIterations are Kafka's bounds
// (ScramMechanism.minIterations; KIP-554: at most 16,384).
const (
	scramMinIterations     = 4096
	scramMaxIterations     = 16384
	scramDefaultIterations = 4096
)

func scramHash(mechanism string) (func() hash.Hash, scram.HashGeneratorFcn, bool) {
	switch mechanism {
	case ScramSHA256:
		return sha256.New, scram.SHA256, true
	case ScramSHA512:
		return sha512.New, scram.SHA512, true
	}
	return nil, nil, false
}

// ScramCredential is what is kept of a SCRAM password: salt, iteration
// count, StoredKey and ServerKey (RFC 5802), never the password.
type ScramCredential struct {
	Mechanism  string
	User       string
	Iterations int
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
}

// ScramFile is the credentials file in the data directory, written
// atomically with mode 0600. Text, one credential a line:
//
//	minibroker-scram-credentials v1
//	<mechanism> <base64url user> <iterations> <base64 salt> <base64 StoredKey> <base64 ServerKey>
const ScramFile = "scram-credentials"

const scramFileHeader = "minibroker-scram-credentials v1"

// ScramStore holds the SCRAM credentials, durably.
type ScramStore struct {
	fs  vfs.FS
	dir string

	mu    sync.RWMutex // guards creds
	creds map[[2]string]ScramCredential
}

// OpenScramStore reads dir's credentials file (none: empty store).
func OpenScramStore(fs vfs.FS, dir string) (*ScramStore, error) {
	s := &ScramStore{fs: fs, dir: dir, creds: map[[2]string]ScramCredential{}}
	raw, err := vfs.ReadFile(fs, filepath.Join(dir, ScramFile))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("scram credentials: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			if text != scramFileHeader {
				return nil, fmt.Errorf("scram credentials: %s: unknown header %q", ScramFile, text)
			}
			continue
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		c, err := parseCredentialLine(f)
		if err != nil {
			return nil, fmt.Errorf("scram credentials: %s line %d: %w", ScramFile, line, err)
		}
		s.creds[[2]string{c.Mechanism, c.User}] = c
	}
	return s, nil
}

func parseCredentialLine(f []string) (ScramCredential, error) {
	if len(f) != 6 {
		return ScramCredential{}, errors.New("want 6 fields")
	}
	if _, _, ok := scramHash(f[0]); !ok {
		return ScramCredential{}, fmt.Errorf("mechanism %q", f[0])
	}
	user, err := base64.RawURLEncoding.DecodeString(f[1])
	if err != nil {
		return ScramCredential{}, fmt.Errorf("user: %w", err)
	}
	iters, err := strconv.Atoi(f[2])
	if err != nil {
		return ScramCredential{}, fmt.Errorf("iterations: %w", err)
	}
	var parts [3][]byte
	for i := range parts {
		if parts[i], err = base64.StdEncoding.DecodeString(f[3+i]); err != nil {
			return ScramCredential{}, err
		}
	}
	return ScramCredential{Mechanism: f[0], User: string(user), Iterations: iters, Salt: parts[0], StoredKey: parts[1], ServerKey: parts[2]}, nil
}

// saveLocked writes every credential; s.mu held.
func (s *ScramStore) saveLocked() error {
	keys := make([][2]string, 0, len(s.creds))
	for k := range s.creds {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	var b strings.Builder
	b.WriteString(scramFileHeader + "\n")
	for _, k := range keys {
		c := s.creds[k]
		fmt.Fprintf(&b, "%s %s %d %s %s %s\n", c.Mechanism, base64.RawURLEncoding.EncodeToString([]byte(c.User)), c.Iterations,
			base64.StdEncoding.EncodeToString(c.Salt), base64.StdEncoding.EncodeToString(c.StoredKey), base64.StdEncoding.EncodeToString(c.ServerKey))
	}
	return vfs.WriteFileAtomicPrivate(s.fs, s.dir, filepath.Join(s.dir, ScramFile), []byte(b.String()))
}

// Errors of the KIP-554 API, turned into Kafka codes by the broker.
var (
	ErrUnsupportedMechanism = errors.New("security: unsupported SCRAM mechanism")
	ErrIterations           = errors.New("security: iterations out of range")
	ErrNoCredential         = errors.New("security: no such SCRAM credential")
	ErrEmptyUser            = errors.New("security: empty user name")
)

// CheckIterations is Kafka's rule for an upsertion's iteration count.
func CheckIterations(mechanism string, iterations int) error {
	if _, _, ok := scramHash(mechanism); !ok {
		return ErrUnsupportedMechanism
	}
	if iterations < scramMinIterations || iterations > scramMaxIterations {
		return fmt.Errorf("%w: %d (%s takes %d to %d)", ErrIterations, iterations, mechanism, scramMinIterations, scramMaxIterations)
	}
	return nil
}

// Upsert stores the credential of a salted password (what a KIP-554
// AlterUserScramCredentials upsertion carries): StoredKey and ServerKey
// are derived from it, the salted password is not kept.
func (s *ScramStore) Upsert(mechanism, user string, iterations int, salt, saltedPassword []byte) error {
	if user == "" {
		return ErrEmptyUser
	}
	if err := CheckIterations(mechanism, iterations); err != nil {
		return err
	}
	h, _, _ := scramHash(mechanism)
	mac := func(key []byte, msg string) []byte { m := hmac.New(h, key); m.Write([]byte(msg)); return m.Sum(nil) }
	clientKey := mac(saltedPassword, "Client Key")
	sum := h()
	sum.Write(clientKey)
	c := ScramCredential{Mechanism: mechanism, User: user, Iterations: iterations, Salt: slices.Clone(salt),
		StoredKey: sum.Sum(nil), ServerKey: mac(saltedPassword, "Server Key")}
	return s.put(c)
}

// AddPassword stores a credential for password with a fresh random salt
// (`minibroker storage add-scram`). iterations 0 is Kafka's default, 4096.
func (s *ScramStore) AddPassword(mechanism, user, password string, iterations int) error {
	if iterations == 0 {
		iterations = scramDefaultIterations
	}
	if user == "" {
		return ErrEmptyUser
	}
	if err := CheckIterations(mechanism, iterations); err != nil {
		return err
	}
	_, gen, _ := scramHash(mechanism)
	client, err := gen.NewClient(user, password, "")
	if err != nil {
		return fmt.Errorf("scram: %w", err)
	}
	salt := make([]byte, 32)
	rand.Read(salt)
	sc := client.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: iterations})
	return s.put(ScramCredential{Mechanism: mechanism, User: user, Iterations: iterations, Salt: salt,
		StoredKey: sc.StoredKey, ServerKey: sc.ServerKey})
}

func (s *ScramStore) put(c ScramCredential) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{c.Mechanism, c.User}
	old, had := s.creds[k]
	s.creds[k] = c
	if err := s.saveLocked(); err != nil {
		if had {
			s.creds[k] = old
		} else {
			delete(s.creds, k)
		}
		return err
	}
	return nil
}

// Delete removes a user's credential for mechanism.
func (s *ScramStore) Delete(mechanism, user string) error {
	if _, _, ok := scramHash(mechanism); !ok {
		return ErrUnsupportedMechanism
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{mechanism, user}
	old, ok := s.creds[k]
	if !ok {
		return ErrNoCredential
	}
	delete(s.creds, k)
	if err := s.saveLocked(); err != nil {
		s.creds[k] = old
		return err
	}
	return nil
}

// Describe lists users' credentials (mechanism and iterations, as
// DescribeUserScramCredentials answers); users nil lists everyone.
func (s *ScramStore) Describe(users []string) map[string][]ScramCredential {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string][]ScramCredential{}
	for k, c := range s.creds {
		if users == nil || slices.Contains(users, k[1]) {
			out[k[1]] = append(out[k[1]], c)
		}
	}
	for _, cs := range out {
		slices.SortFunc(cs, func(a, b ScramCredential) int { return strings.Compare(a.Mechanism, b.Mechanism) })
	}
	return out
}

func (s *ScramStore) lookup(mechanism, user string) (ScramCredential, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.creds[[2]string{mechanism, user}]
	return c, ok
}
