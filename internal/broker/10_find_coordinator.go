package broker

// FindCoordinator, v0–v6.
//
// A single node coordinates every group (key type 0), every
// transactional id (key type 1) and every share partition's state (key
// type 2, v6+, "group:topicId:partition", KIP-932's share coordinator):
// the answer is always this broker. v4+ batches keys (CoordinatorKeys).
// Other key types answer INVALID_REQUEST; so does an empty transactional
// id, and a share key that is not group:topicId:partition.

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"

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
		case req.CoordinatorType == 2:
			if r.Version < 6 || !validShareCoordinatorKey(key) {
				return kerr.InvalidRequest
			}
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

// validShareCoordinatorKey: group:topicId:partition (Kafka's
// SharePartitionKey.validate: a non-empty group, a base64 topic id, a
// partition number).
func validShareCoordinatorKey(key string) bool {
	i := strings.LastIndexByte(key, ':')
	if i <= 0 {
		return false
	}
	j := strings.LastIndexByte(key[:i], ':')
	if j <= 0 {
		return false
	}
	if _, err := strconv.ParseInt(key[i+1:], 10, 32); err != nil {
		return false
	}
	id, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(key[j+1:i], "="))
	return err == nil && len(id) == 16
}
