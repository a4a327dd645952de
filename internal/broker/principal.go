package broker

import (
	"go.uber.org/zap"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

// adminAPIs are the requests that change the cluster's topics, groups,
// records or credentials: each is logged with the principal that sent it
// (authz_table.go authorizes them by the same principal).
var adminAPIs = map[int16]bool{
	19: true, // CreateTopics
	20: true, // DeleteTopics
	21: true, // DeleteRecords
	33: true, // AlterConfigs
	37: true, // CreatePartitions
	42: true, // DeleteGroups
	44: true, // IncrementalAlterConfigs
	47: true, // OffsetDelete
	49: true, // AlterClientQuotas
	51: true, // AlterUserScramCredentials
}

// principal is the principal of req's connection: "User:alice", or
// User:ANONYMOUS (PLAINTEXT, SSL without a client certificate, or a
// request from outside a connection).
func principal(req *protocol.Request) string {
	if req == nil || req.Session == nil {
		return protocol.AnonymousPrincipal
	}
	return req.Session.Principal()
}

// logAdmin logs an admin request with who sent it, from where, through
// which listener.
func (b *Broker) logAdmin(req *protocol.Request) {
	remote := ""
	if req.Remote != nil {
		remote = req.Remote.String()
	}
	b.logger.Info("admin request", zap.String("api", kmsg.NameForKey(req.Key)), zap.String("principal", principal(req)),
		zap.String("listener", req.Session.Listener()), zap.String("remote", remote), zap.String("client_id", req.ClientID))
}
