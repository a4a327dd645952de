package broker

// ApiVersions, v0–v4.
//
// Answers with every API in the registry (apis.go). A request for a version
// above v4 never reaches here: the front end answers it with
// UNSUPPORTED_VERSION in a v0 body, as Kafka does. v3+ client software
// name/version must be valid (Kafka: INVALID_REQUEST otherwise). v3+
// lists the supported and finalized features (features.go:
// transaction.version).

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

var softwareNameRe = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (b *Broker) handleApiVersions(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = b.ApiKeys()
	if req.Version >= 3 && b.cfg.String("client.protocol.version") != "3.9" {
		b.features.fill(resp) // KIP-584 (features.go)
	}
	if req.Version >= 3 && (!softwareNameRe.MatchString(req.ClientSoftwareName) || !softwareNameRe.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	return resp
}
