package security

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"

	"github.com/minibroker/minibroker/internal/protocol"
)

// PlainUsers are PLAIN's users from a listener's JAAS
// (PlainLoginModule's user_<name>="<password>" options).
type PlainUsers map[string]string

// errPlainCredentials is PLAIN's refusal, in Kafka's words
// (PlainServerCallbackHandler via PlainSaslServer).
var errPlainCredentials = &protocol.AuthError{Message: "Authentication failed: Invalid username or password"}

// plainConversation is PLAIN (RFC 4616): one message,
// [authzid] NUL authcid NUL passwd.
type plainConversation struct {
	users     PlainUsers
	principal string
}

func (p *plainConversation) Step(msg []byte) ([]byte, bool, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return nil, false, errors.New("PLAIN: malformed message")
	}
	authz, user, pass := string(parts[0]), string(parts[1]), parts[2]
	if user == "" || len(pass) == 0 {
		return nil, false, errPlainCredentials
	}
	if authz != "" && authz != user {
		return nil, false, &protocol.AuthError{Message: "Authentication failed: Client requested an authorization id that is different from username"}
	}
	want, ok := p.users[user]
	// Compare even for an unknown user, so timing does not tell users apart.
	if subtle.ConstantTimeCompare([]byte(want), pass) != 1 || !ok {
		return nil, false, errPlainCredentials
	}
	p.principal = "User:" + user
	return nil, true, nil
}

func (p *plainConversation) Principal() string { return p.principal }

// SASLServer starts conversations in a listener's mechanisms.
type SASLServer struct {
	Mechanisms []string
	Plain      PlainUsers
	Scram      *ScramStore
	scramOn    map[string]bool // the SCRAM mechanisms enabled

	// knobs are the test seams (knobs.go): set only by this package's
	// negative-control tests; the zero value is production.
	knobs knobs
}

// NewSASLServer checks mechanisms and prepares the SCRAM servers.
func NewSASLServer(mechanisms []string, plain PlainUsers, store *ScramStore) (*SASLServer, error) {
	s := &SASLServer{Mechanisms: mechanisms, Plain: plain, Scram: store, scramOn: map[string]bool{}}
	for _, m := range mechanisms {
		switch m {
		case "PLAIN":
		case ScramSHA256, ScramSHA512:
			s.scramOn[m] = true
		default:
			return nil, fmt.Errorf("sasl.enabled.mechanisms: %s is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", m)
		}
	}
	return s, nil
}

// Start begins a conversation (protocol.SASL.Start).
func (s *SASLServer) Start(mechanism string) (protocol.SASLConversation, error) {
	if mechanism == "PLAIN" {
		return &plainConversation{users: s.Plain}, nil
	}
	if s.scramOn[mechanism] {
		return newScramConversation(mechanism, s.Scram, s.knobs)
	}
	return nil, fmt.Errorf("mechanism %s", mechanism)
}

// PlainUsersFromJAAS reads user_<name>="<password>" options.
func PlainUsersFromJAAS(options map[string]string) PlainUsers {
	users := PlainUsers{}
	for k, v := range options {
		if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
			users[name] = v
		}
	}
	return users
}
