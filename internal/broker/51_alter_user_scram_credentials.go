package broker

// AlterUserScramCredentials, v0 (KIP-554).
//
// Upsertions carry a salt and a salted password (the client derives it,
// so the password never reaches the broker); minibroker keeps StoredKey
// and ServerKey, durably, in DATA/scram-credentials (mode 0600), and new
// connections authenticate with them at once. Errors per user, as Kafka:
// UNSUPPORTED_SASL_MECHANISM for an unknown mechanism,
// UNACCEPTABLE_CREDENTIAL for an empty user or iterations outside
// 4096–16384, RESOURCE_NOT_FOUND to delete what does not exist,
// DUPLICATE_RESOURCE for a user altered twice in one request. Changing a
// credential does not disconnect connections already authenticated (as
// Kafka). With the authorizer on it needs ALTER on the cluster
// (authz_table.go); the request is logged with its principal.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/security"
)

func (b *Broker) handleAlterUserScramCredentials(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	count := map[string]int{}
	var order []string
	note := func(u string) {
		if count[u] == 0 {
			order = append(order, u)
		}
		count[u]++
	}
	for _, d := range req.Deletions {
		note(d.Name)
	}
	for _, u := range req.Upsertions {
		note(u.Name)
	}
	results := map[string]*kmsg.AlterUserSCRAMCredentialsResponseResult{}
	for _, u := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = u
		results[u] = &res
	}
	fail := func(user string, e *kerr.Error, msg string) {
		res := results[user]
		if res.ErrorCode == 0 {
			res.ErrorCode, res.ErrorMessage = e.Code, &msg
		}
	}
	for user, n := range count {
		if n > 1 {
			fail(user, kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		}
	}
	for _, d := range req.Deletions {
		if results[d.Name].ErrorCode != 0 {
			continue
		}
		mech := scramMechanismName(d.Mechanism)
		switch err := b.scram.Delete(mech, d.Name); {
		case d.Name == "":
			fail(d.Name, kerr.UnacceptableCredential, "Username must not be empty")
		case mech == "" || errors.Is(err, security.ErrUnsupportedMechanism):
			fail(d.Name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		case errors.Is(err, security.ErrNoCredential):
			fail(d.Name, kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
		case err != nil:
			fail(d.Name, kerr.UnknownServerError, "storing the credentials failed")
			b.logger.Error("deleting a SCRAM credential", zap.String("user", d.Name), zap.Error(err))
		default:
			b.logger.Info("deleted SCRAM credential", zap.String("user", d.Name), zap.String("mechanism", mech), zap.String("principal", principal(r)))
		}
	}
	for _, u := range req.Upsertions {
		if results[u.Name].ErrorCode != 0 {
			continue
		}
		mech := scramMechanismName(u.Mechanism)
		if mech == "" {
			fail(u.Name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
			continue
		}
		switch err := b.scram.Upsert(mech, u.Name, int(u.Iterations), u.Salt, u.SaltedPassword); {
		case errors.Is(err, security.ErrEmptyUser):
			fail(u.Name, kerr.UnacceptableCredential, "Username must not be empty")
		case errors.Is(err, security.ErrIterations):
			fail(u.Name, kerr.UnacceptableCredential, err.Error())
		case err != nil:
			fail(u.Name, kerr.UnknownServerError, "storing the credentials failed")
			b.logger.Error("storing a SCRAM credential", zap.String("user", u.Name), zap.Error(err))
		default:
			b.logger.Info("upserted SCRAM credential", zap.String("user", u.Name), zap.String("mechanism", mech),
				zap.Int32("iterations", u.Iterations), zap.String("principal", principal(r)))
		}
	}
	for _, u := range order {
		resp.Results = append(resp.Results, *results[u])
	}
	return resp
}
