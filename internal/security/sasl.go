package security

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/xdg-go/scram"

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

// scramConversation runs xdg-go/scram's server side.
type scramConversation struct {
	conv *scram.ServerConversation
}

func (s *scramConversation) Step(msg []byte) ([]byte, bool, error) {
	reply, err := s.conv.Step(string(msg))
	if err != nil {
		// The generic message (SaslServerAuthenticator): the reason, such
		// as an unknown user, is not told to the client.
		return nil, false, err
	}
	if s.conv.Done() {
		if !s.conv.Valid() {
			return nil, false, errors.New("SCRAM: invalid proof")
		}
		return []byte(reply), true, nil
	}
	return []byte(reply), false, nil
}

func (s *scramConversation) Principal() string { return "User:" + s.conv.Username() }

// SASLServer starts conversations in a listener's mechanisms.
type SASLServer struct {
	Mechanisms []string
	Plain      PlainUsers
	Scram      *ScramStore
	servers    map[string]*scram.Server
}

// NewSASLServer checks mechanisms and prepares the SCRAM servers.
func NewSASLServer(mechanisms []string, plain PlainUsers, store *ScramStore) (*SASLServer, error) {
	s := &SASLServer{Mechanisms: mechanisms, Plain: plain, Scram: store, servers: map[string]*scram.Server{}}
	for _, m := range mechanisms {
		switch m {
		case "PLAIN":
		case ScramSHA256, ScramSHA512:
			_, gen, _ := scramHash(m)
			srv, err := gen.NewServer(func(user string) (scram.StoredCredentials, error) {
				c, ok := store.lookup(m, user)
				if !ok {
					return scram.StoredCredentials{}, fmt.Errorf("no %s credential", m)
				}
				return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
					StoredKey: c.StoredKey, ServerKey: c.ServerKey}, nil
			})
			if err != nil {
				return nil, err
			}
			s.servers[m] = srv.WithNonceGenerator(scramNonce)
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
	if srv, ok := s.servers[mechanism]; ok {
		return &scramConversation{conv: srv.NewConversation()}, nil
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

// scramNonce is the server's part of a SCRAM nonce: 130 random bits in
// base 36, letters and digits only, as Kafka's ScramFormatter makes it.
// (xdg-go/scram's default is base64, whose '+' and '/' librdkafka 2.0
// mishandles: its final message then carries another nonce.)
func scramNonce() string {
	b := make([]byte, 17)
	rand.Read(b)
	b[0] &= 0x03 // 130 bits
	return new(big.Int).SetBytes(b).Text(36)
}
