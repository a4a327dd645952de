package broker

// CreateDelegationToken v1–v3, RenewDelegationToken v1–v2,
// ExpireDelegationToken v1–v2, DescribeDelegationToken v1–v3 (KIP-48;
// Kafka 4.0's ranges: KIP-896 removed v0 of each).
//
// These are Kafka's answers when delegation.token.secret.key is not set:
// a request that may not ask for tokens (a PLAINTEXT connection, an SSL
// connection without a client certificate, i.e. User:ANONYMOUS, or a
// token-authenticated one) is DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
// (KafkaApis.allowTokenRequests, checked first); any other is
// DELEGATION_TOKEN_AUTH_DISABLED. Create answers the owner (the
// requester when none is named) and, v3, the requester; a renewer that
// is not a User is INVALID_PRINCIPAL_TYPE, as Kafka checks before the
// controller answers. Timestamps are -1 (Kafka's ErrorTimestamp) and
// Describe lists no token.
//
// Deviation: minibroker does not support delegation tokens at all: there
// is no secret key to set, no token is ever created, and SASL/SCRAM does
// not accept tokenauth=true. With the authorizer on, Kafka checks
// CREATE_TOKENS on the owner User when creating a token for another
// principal (DELEGATION_TOKEN_AUTHORIZATION_FAILED); minibroker checks
// the same (on the USER resource named by the owner principal); an ACL
// it cannot match denies. No ACL is checked before (authz_table.go).

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

// tokenRequestsAllowed is Kafka's allowTokenRequests: not PLAINTEXT, not
// an anonymous SSL connection (minibroker has no token authentication).
func tokenRequestsAllowed(r *protocol.Request) bool {
	switch r.Session.SecurityProtocol() {
	case protocol.SASLPlaintext, protocol.SASLSSL:
		return true
	case protocol.SSL:
		return r.Session.Principal() != protocol.AnonymousPrincipal
	}
	return false
}

// tokenCode is the answer of every token request: not allowed on this
// connection, or token authentication disabled.
func tokenCode(r *protocol.Request) int16 {
	if !tokenRequestsAllowed(r) {
		return kerr.DelegationTokenRequestNotAllowed.Code
	}
	return kerr.DelegationTokenAuthDisabled.Code
}

// splitPrincipal splits "User:alice" into its type and name.
func splitPrincipal(p string) (string, string) {
	typ, name, ok := strings.Cut(p, ":")
	if !ok {
		return "User", p
	}
	return typ, name
}

func (b *Broker) handleCreateDelegationToken(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.CreateDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
	reqType, reqName := splitPrincipal(r.Session.Principal())
	ownerType, ownerName := reqType, reqName
	if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
		ownerName = *req.OwnerPrincipalName
		ownerType = "User"
		if req.OwnerPrincipalType != nil {
			ownerType = *req.OwnerPrincipalType
		}
	}
	resp.PrincipalType, resp.PrincipalName = ownerType, ownerName
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = reqType, reqName
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = -1, -1, -1
	resp.HMAC = []byte{}
	code := tokenCode(r)
	if code == kerr.DelegationTokenAuthDisabled.Code {
		otherOwner := ownerType != reqType || ownerName != reqName
		badRenewer := false
		for _, rn := range req.Renewers {
			badRenewer = badRenewer || rn.PrincipalType != "User"
		}
		switch {
		case otherOwner && !b.authorized(r, kmsg.ACLResourceTypeUser, ownerType+":"+ownerName, kmsg.ACLOperationCreateTokens):
			code = kerr.DelegationTokenAuthorizationFailed.Code
		case badRenewer:
			code = kerr.InvalidPrincipalType.Code
		}
	}
	resp.ErrorCode = code
	return resp
}

func (b *Broker) handleRenewDelegationToken(_ context.Context, r *protocol.Request) kmsg.Response {
	resp := r.Body.(*kmsg.RenewDelegationTokenRequest).ResponseKind().(*kmsg.RenewDelegationTokenResponse)
	resp.ErrorCode, resp.ExpiryTimestamp = tokenCode(r), -1
	return resp
}

func (b *Broker) handleExpireDelegationToken(_ context.Context, r *protocol.Request) kmsg.Response {
	resp := r.Body.(*kmsg.ExpireDelegationTokenRequest).ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
	resp.ErrorCode, resp.ExpiryTimestamp = tokenCode(r), -1
	return resp
}

func (b *Broker) handleDescribeDelegationToken(_ context.Context, r *protocol.Request) kmsg.Response {
	resp := r.Body.(*kmsg.DescribeDelegationTokenRequest).ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
	resp.ErrorCode = tokenCode(r)
	resp.TokenDetails = []kmsg.DescribeDelegationTokenResponseTokenDetail{}
	return resp
}
