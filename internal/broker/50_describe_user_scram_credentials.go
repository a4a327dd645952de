package broker

// DescribeUserScramCredentials, v0 (KIP-554).
//
// Every user's SCRAM credentials (mechanism and iteration count, never
// salt or keys), or those of the users asked for: a user with none
// answers RESOURCE_NOT_FOUND, a user named twice DUPLICATE_RESOURCE, as
// Kafka does.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/security"
)

// scramMechanismCode is KIP-554's ScramMechanism: 1 SCRAM-SHA-256,
// 2 SCRAM-SHA-512 (0 unknown).
func scramMechanismCode(m string) int8 {
	switch m {
	case security.ScramSHA256:
		return 1
	case security.ScramSHA512:
		return 2
	}
	return 0
}

func scramMechanismName(code int8) string {
	switch code {
	case 1:
		return security.ScramSHA256
	case 2:
		return security.ScramSHA512
	}
	return ""
}

func (b *Broker) handleDescribeUserScramCredentials(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	var users []string
	seen := map[string]int{}
	if req.Users != nil {
		users = []string{}
		for _, u := range req.Users {
			seen[u.Name]++
			users = append(users, u.Name)
		}
	}
	creds := b.scram.Describe(users)
	result := func(user string) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = user
		for _, c := range creds[user] {
			ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			ci.Mechanism, ci.Iterations = scramMechanismCode(c.Mechanism), int32(c.Iterations)
			res.CredentialInfos = append(res.CredentialInfos, ci)
		}
		return res
	}
	if req.Users == nil {
		for user := range creds {
			resp.Results = append(resp.Results, result(user))
		}
		return resp
	}
	done := map[string]bool{}
	for _, user := range users {
		if done[user] {
			continue
		}
		done[user] = true
		res := result(user)
		switch {
		case seen[user] > 1:
			res.ErrorCode, res.CredentialInfos = kerr.DuplicateResource.Code, nil
			msg := "Cannot describe SCRAM credentials for the same user twice in a single request: " + user
			res.ErrorMessage = &msg
		case len(res.CredentialInfos) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			msg := "Attempt to describe a user credential that does not exist: " + user
			res.ErrorMessage = &msg
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}
