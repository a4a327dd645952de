package broker

import (
	"go.uber.org/zap"

	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/acl"
	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/vfs"
)

// openAuthorizer opens the ACLs when authorizer.class.name is set (nil:
// authorization off, everything allowed).
func openAuthorizer(fs vfs.FS, dir string, cfg config.Config) (*acl.Authorizer, error) {
	if cfg.String("authorizer.class.name") == "" {
		return nil, nil
	}
	return acl.Open(fs, dir, acl.Config{
		SuperUsers:   config.SuperUsers(cfg.String("super.users")),
		AllowIfNoACL: cfg.Bool("allow.everyone.if.no.acl.found"),
	})
}

// aclHost is the client's IP, as Kafka's ACL host field names it.
func aclHost(req *protocol.Request) string {
	if req == nil || req.Remote == nil {
		return ""
	}
	switch a := req.Remote.(type) {
	case *net.TCPAddr:
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(req.Remote.String())
	if err != nil {
		return req.Remote.String()
	}
	return host
}

// authorized reports whether req's principal may perform op on the
// resource (always, with the authorizer off). A request from outside a
// connection (req.Session nil: the broker's own calls) is the broker
// itself and always allowed.
func (b *Broker) authorized(req *protocol.Request, rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) bool {
	if b.authz == nil || req == nil || req.Session == nil {
		return true
	}
	return b.authz.Authorize(principal(req), aclHost(req), rt, name, op)
}

// authorizedTopic, authorizedGroup, authorizedCluster and
// authorizedTxnID are authorized for one resource type.
func (b *Broker) authorizedTopic(req *protocol.Request, topic string, op kmsg.ACLOperation) bool {
	return b.authorized(req, kmsg.ACLResourceTypeTopic, topic, op)
}

func (b *Broker) authorizedGroup(req *protocol.Request, group string, op kmsg.ACLOperation) bool {
	return b.authorized(req, kmsg.ACLResourceTypeGroup, group, op)
}

func (b *Broker) authorizedCluster(req *protocol.Request, op kmsg.ACLOperation) bool {
	return b.authorized(req, kmsg.ACLResourceTypeCluster, acl.ClusterName, op)
}

func (b *Broker) authorizedTxnID(req *protocol.Request, id string, op kmsg.ACLOperation) bool {
	return b.authorized(req, kmsg.ACLResourceTypeTransactionalId, id, op)
}

// authorizedOps is KIP-430's authorized_operations of a resource for
// req's principal; with the authorizer off, every operation of the
// resource type (Kafka answers so too when no authorizer is configured).
func (b *Broker) authorizedOps(req *protocol.Request, rt kmsg.ACLResourceType, name string, ops []kmsg.ACLOperation) int32 {
	if b.authz == nil || req == nil || req.Session == nil {
		var bits int32
		for _, op := range ops {
			bits |= 1 << op
		}
		return bits
	}
	return b.authz.AuthorizedOperations(principal(req), aclHost(req), rt, name, ops)
}

func zapPrincipal(req *protocol.Request) zap.Field { return zap.String("principal", principal(req)) }

func zapBindings(bs []acl.Binding) zap.Field {
	s := make([]string, len(bs))
	for i, bd := range bs {
		s[i] = bd.String()
	}
	return zap.Strings("acls", s)
}

// aclClusterAuthorizer is the HTTP admin API's ClusterAuthorizer over the
// Kafka ACLs: the principal needs op ("ALTER", "DESCRIBE") on the CLUSTER.
type aclClusterAuthorizer struct{ authz *acl.Authorizer }

func (c aclClusterAuthorizer) AuthorizeCluster(principal, host, op string) bool {
	o, err := kmsg.ParseACLOperation(op)
	if err != nil {
		return false
	}
	return c.authz.Authorize(principal, host, kmsg.ACLResourceTypeCluster, acl.ClusterName, o)
}
