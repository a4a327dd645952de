package security

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/xdg-go/scram"
)

// scramConversation runs xdg-go/scram's server side, plus the one
// client-final form librdkafka before 2.6.1 sends (see finalLibrdkafka).
type scramConversation struct {
	mechanism string
	conv      *scram.ServerConversation
	cred      ScramCredential // the credential the first step looked up
	found     bool

	c1, s1 string // client-first and server-first messages, once exchanged

	// refuseLibrdkafkaNonce turns finalLibrdkafka off (knobs).
	refuseLibrdkafkaNonce bool
}

func newScramConversation(mechanism string, store *ScramStore, k knobs) (*scramConversation, error) {
	_, gen, _ := scramHash(mechanism)
	s := &scramConversation{mechanism: mechanism, refuseLibrdkafkaNonce: k.refuseLibrdkafkaNonce}
	// One server per conversation, so the credential its first step looks
	// up is the one finalLibrdkafka verifies against.
	srv, err := gen.NewServer(func(user string) (scram.StoredCredentials, error) {
		var c ScramCredential
		if store != nil {
			c, s.found = store.lookup(mechanism, user)
		}
		if !s.found {
			return scram.StoredCredentials{}, fmt.Errorf("no %s credential", mechanism)
		}
		s.cred = c
		return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
			StoredKey: c.StoredKey, ServerKey: c.ServerKey}, nil
	})
	if err != nil {
		return nil, err
	}
	s.conv = srv.WithNonceGenerator(scramNonce).NewConversation()
	return s, nil
}

func (s *scramConversation) Step(msg []byte) ([]byte, bool, error) {
	if s.s1 != "" && !s.refuseLibrdkafkaNonce {
		if reply, ok, err := s.finalLibrdkafka(string(msg)); ok {
			return reply, err == nil, err
		}
	}
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
	s.c1, s.s1 = string(msg), reply
	return []byte(reply), false, nil
}

func (s *scramConversation) Principal() string { return "User:" + s.conv.Username() }

// scramAttr returns the value of attribute key ("r") in a SCRAM message's
// comma-separated field i.
func scramAttr(msg string, i int, key string) (string, bool) {
	fields := strings.Split(msg, ",")
	if i >= len(fields) {
		return "", false
	}
	return strings.CutPrefix(fields[i], key+"=")
}

// finalLibrdkafka serves the client-final message of librdkafka before
// 2.6.1, whose nonce attribute is its own nonce followed by the whole
// nonce of the server-first message, which already begins with it
// (rd_kafka_sasl_scram_build_client_final_message_wo_proof wrote
// "r=<c-nonce><server nonce>"; fixed by librdkafka #4895). RFC 5802
// wants the server's nonce echoed exactly, and xdg-go/scram refuses the
// message ("nonce received did not match nonce sent"). Apache Kafka,
// since 3.8.1, accepts any client nonce that ends with the server's; this
// accepts only librdkafka's form, and verifies the proof over the
// message as the client sent it, as Kafka does. ok is false for any other
// message, which xdg-go then judges.
func (s *scramConversation) finalLibrdkafka(c2 string) (reply []byte, ok bool, err error) {
	cnonce, ok1 := scramAttr(s.c1, 3, "r")
	snonce, ok2 := scramAttr(s.s1, 0, "r")
	got, ok3 := scramAttr(c2, 1, "r")
	if !ok1 || !ok2 || !ok3 || cnonce == "" || got != cnonce+snonce {
		return nil, false, nil
	}
	fail := errors.New("SCRAM: invalid proof")
	if !s.found {
		return nil, true, fail
	}
	// c2 = c=<base64 gs2 header>,r=<nonce>[,extensions],p=<proof>
	cut := strings.LastIndex(c2, ",")
	proofB64, isProof := strings.CutPrefix(c2[cut+1:], "p=")
	cbind, isCbind := scramAttr(c2, 0, "c")
	fields := strings.SplitN(s.c1, ",", 3)
	if !isProof || !isCbind || len(fields) != 3 {
		return nil, true, fail
	}
	if gs2, err := base64.StdEncoding.DecodeString(cbind); err != nil || string(gs2) != fields[0]+","+fields[1]+"," {
		return nil, true, errors.New("SCRAM: channel binding does not match")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	h, _, _ := scramHash(s.mechanism)
	if err != nil || len(proof) != h().Size() {
		return nil, true, fail
	}
	authMsg := []byte(fields[2] + "," + s.s1 + "," + c2[:cut])
	mac := func(key []byte) []byte { m := hmac.New(h, key); m.Write(authMsg); return m.Sum(nil) }
	clientKey := mac(s.cred.StoredKey)
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	sum := h()
	sum.Write(clientKey)
	if subtle.ConstantTimeCompare(sum.Sum(nil), s.cred.StoredKey) != 1 {
		return nil, true, fail
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(mac(s.cred.ServerKey))), true, nil
}

// scramNonce is the server's part of a SCRAM nonce: 130 random bits in
// base 36, letters and digits only, as Kafka's ScramFormatter makes it.
func scramNonce() string {
	b := make([]byte, 17)
	rand.Read(b)
	b[0] &= 0x03 // 130 bits
	return new(big.Int).SetBytes(b).Text(36)
}
