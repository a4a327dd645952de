package broker

// FindCoordinator, v0–v6.
//
// A single node coordinates every group (key type 0) and every
// transactional id (key type 1): the answer is always this broker. v4+
// batches keys (CoordinatorKeys). Other key types (share groups, v6's type
// 2) answer INVALID_REQUEST; so does an empty transactional id.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleFindCoordinator(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	host, port := b.advertised(r)
	check := func(key string) *kerr.Error {
		switch {
		case req.CoordinatorType != 0 && req.CoordinatorType != 1:
			return kerr.InvalidRequest
		case req.CoordinatorType == 1 && key == "":
			return kerr.InvalidRequest
		}
		return nil
	}
	if r.Version < 4 {
		if e := check(req.CoordinatorKey); e != nil {
			resp.ErrorCode, resp.NodeID, resp.Port = e.Code, -1, -1
			return resp
		}
		resp.NodeID, resp.Host, resp.Port = b.nodeID, host, port
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		if e := check(key); e != nil {
			c.ErrorCode, c.NodeID, c.Port = e.Code, -1, -1
		} else {
			c.NodeID, c.Host, c.Port = b.nodeID, host, port
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp
}
