package broker

// Which ACL each Kafka API needs: the one table, API key → required
// (resource, operation), applied by Handle to every request before its
// handler when the authorizer is on (authorizer.class.name). Each entry's
// needs is the documentation; apply is the check. TestAuthzTableCoversEveryAPI
// fails for a served API without an entry, so a new handler cannot be
// forgotten. Metadata, DescribeGroups, DescribeCluster and the ACL APIs
// check inside their handlers (what they leave out or report depends on
// each topic or group); their entries say so.
//
// Rules and codes are Kafka's (KafkaApis, Kafka 3.x): a denied topic gets
// TOPIC_AUTHORIZATION_FAILED in its own entry and the rest of the request
// is served; a denied group, transactional id or cluster action fails the
// whole request with GROUP_, TRANSACTIONAL_ID_ or
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

// authzRule is one API's authorization.
type authzRule struct {
	// needs says what the API requires, as Kafka's docs list it.
	needs string
	// apply checks req: a non-nil deny is the whole answer; otherwise
	// the handler runs (on req, from which apply may have removed the
	// entries it refused) and after, if set, adds their error entries or
	// filters the response.
	apply func(b *Broker, req *protocol.Request) (deny kmsg.Response, after func(kmsg.Response))
}

const (
	aclRead            = kmsg.ACLOperationRead
	aclWrite           = kmsg.ACLOperationWrite
	aclCreate          = kmsg.ACLOperationCreate
	aclDelete          = kmsg.ACLOperationDelete
	aclAlter           = kmsg.ACLOperationAlter
	aclDescribe        = kmsg.ACLOperationDescribe
	aclClusterAction   = kmsg.ACLOperationClusterAction
	aclDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	aclAlterConfigs    = kmsg.ACLOperationAlterConfigs
	aclIdempotentWrite = kmsg.ACLOperationIdempotentWrite
)

var (
	codeTopic   = kerr.TopicAuthorizationFailed.Code
	codeGroup   = kerr.GroupAuthorizationFailed.Code
	codeCluster = kerr.ClusterAuthorizationFailed.Code
	codeTxnID   = kerr.TransactionalIDAuthorizationFailed.Code
)

// authzTable is keyed by API key; every served API has an entry.
var authzTable = map[int16]authzRule{
	0:  {"WRITE on each topic (TOPIC_AUTHORIZATION_FAILED per topic); transactional: WRITE on the transactional id", applyProduce},
	1:  {"READ on each topic; a replica fetch (replica id >= 0): CLUSTER_ACTION on the cluster", applyFetch},
	2:  {"DESCRIBE on each topic", topicsRule("Topics", "Topics", aclDescribe)},
	3:  {"in the handler: topics the principal may not DESCRIBE are left out of a list-all and TOPIC_AUTHORIZATION_FAILED when named; auto-creation needs CREATE on the cluster or the topic; KIP-430 authorized_operations", nil},
	8:  {"READ on the group (GROUP_AUTHORIZATION_FAILED), READ on each topic", chain(groupRule(aclRead), topicsRule("Topics", "Topics", aclRead))},
	9:  {"DESCRIBE on the group; DESCRIBE on each topic (others answer TOPIC_AUTHORIZATION_FAILED)", applyOffsetFetch},
	10: {"DESCRIBE on the group or the transactional id asked for", applyFindCoordinator},
	11: {"READ on the group", groupRule(aclRead)},
	12: {"READ on the group", groupRule(aclRead)},
	13: {"READ on the group (denied: the top-level code only, as Kafka)", groupTopRule(aclRead)},
	14: {"READ on the group", groupRule(aclRead)},
	15: {"in the handler: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED per group); KIP-430 authorized_operations", nil},
	16: {"DESCRIBE on the cluster lists every group; otherwise only the groups the principal may DESCRIBE", applyListGroups},
	17: {"none: before authentication", nil},
	18: {"none: before authentication", nil},
	19: {"CREATE on the cluster or on each topic; a created topic's configs only with DESCRIBE_CONFIGS on it", applyCreateTopics},
	20: {"DELETE on each topic", chain(topicsRule("TopicNames", "Topics", aclDelete), topicsRule("Topics", "Topics", aclDelete))},
	21: {"DELETE on each topic", topicsRule("Topics", "Topics", aclDelete)},
	22: {"transactional: WRITE on the transactional id; idempotent: IDEMPOTENT_WRITE on the cluster or WRITE on any topic (Kafka 3.x, KIP-679)", applyInitProducerID},
	23: {"CLUSTER_ACTION on the cluster, or DESCRIBE on each topic (KIP-320: consumers use it too; the replica id does not matter)", applyOffsetForLeaderEpoch},
	24: {"WRITE on the transactional id; WRITE on each topic, all or nothing: a denied topic fails the whole request (OPERATION_NOT_ATTEMPTED for the others)", chain(txnRule(aclWrite), applyAddPartitionsToTxn)},
	25: {"WRITE on the transactional id; READ on the group", chain(txnRule(aclWrite), groupRule(aclRead))},
	26: {"WRITE on the transactional id", txnRule(aclWrite)},
	27: {"ALTER or CLUSTER_ACTION on the cluster", anyClusterRule(aclAlter, aclClusterAction)},
	28: {"WRITE on the transactional id; READ on the group; READ on each topic", chain(txnRule(aclWrite), groupRule(aclRead), topicsRule("Topics", "Topics", aclRead))},
	29: {"in the handler: DESCRIBE on the cluster", nil},
	30: {"in the handler: ALTER on the cluster", nil},
	31: {"in the handler: ALTER on the cluster", nil},
	32: {"DESCRIBE_CONFIGS on each topic; on the cluster for a broker or broker-logger resource", configsRule(aclDescribeConfigs)},
	33: {"ALTER_CONFIGS on each topic; on the cluster for a broker or broker-logger resource", configsRule(aclAlterConfigs)},
	35: {"DESCRIBE on the cluster", clusterRule(aclDescribe)},
	36: {"none: authentication itself", nil},
	37: {"ALTER on each topic", topicsRule("Topics", "Topics", aclAlter)},
	42: {"DELETE on each group", groupsRule("Groups", "Groups", "Group", kmsg.ACLResourceTypeGroup, aclDelete, codeGroup)},
	44: {"ALTER_CONFIGS on each topic; on the cluster for a broker or broker-logger resource", configsRule(aclAlterConfigs)},
	47: {"DELETE on the group (denied: the top-level code only, as Kafka); READ on each topic", chain(groupTopRule(aclDelete), topicsRule("Topics", "Topics", aclRead))},
	50: {"DESCRIBE on the cluster", applyDescribeUserSCRAM},
	51: {"ALTER on the cluster", applyAlterUserSCRAM},
	60: {"in the handler: KIP-430 authorized_operations of the cluster; no ACL needed (Kafka)", nil},
	61: {"READ on each topic", topicsRule("Topics", "Topics", aclRead)},
	65: {"DESCRIBE on each transactional id; a transaction's topics the principal may not DESCRIBE are left out", chain(groupsRule("TransactionalIDs", "TransactionStates", "TransactionalID", kmsg.ACLResourceTypeTransactionalId, aclDescribe, codeTxnID), applyDescribeTransactions)},
	66: {"only the transactional ids the principal may DESCRIBE are listed", applyListTransactions},
}

// authorizeRequest applies req's rule (authorizer on, request from a
// connection).
func (b *Broker) authorizeRequest(req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	if b.authz == nil || req.Session == nil {
		return nil, nil
	}
	if b.skipAuthzRule != nil && b.skipAuthzRule(req.Key) {
		return nil, nil
	}
	rule, ok := authzTable[req.Key]
	if !ok {
		// Never reached for a served API (the table test); refuse rather
		// than serve unchecked.
		return errorResponse(req.Body, codeCluster), nil
	}
	if rule.apply == nil {
		return nil, nil
	}
	return rule.apply(b, req)
}

func chain(rules ...func(*Broker, *protocol.Request) (kmsg.Response, func(kmsg.Response))) func(*Broker, *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	return func(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
		var afters []func(kmsg.Response)
		for _, r := range rules {
			deny, after := r(b, req)
			if deny != nil {
				return deny, nil
			}
			if after != nil {
				afters = append(afters, after)
			}
		}
		if len(afters) == 0 {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			for _, a := range afters {
				a(resp)
			}
		}
	}
}

func clusterRule(op kmsg.ACLOperation) func(*Broker, *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	return anyClusterRule(op)
}

// anyClusterRule: any one of ops on the cluster.
func anyClusterRule(ops ...kmsg.ACLOperation) func(*Broker, *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	return func(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
		for _, op := range ops {
			if b.authorizedCluster(req, op) {
				return nil, nil
			}
		}
		return errorResponse(req.Body, codeCluster), nil
	}
}

// stringField is a request's string (or *string) field; ok false when
// it is absent or null.
func stringField(body kmsg.Request, name string) (string, bool) {
	f := reflect.ValueOf(body).Elem().FieldByName(name)
	switch {
	case !f.IsValid():
	case f.Kind() == reflect.String:
		return f.String(), true
	case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.String:
		return f.Elem().String(), true
	}
	return "", false
}

// groupRule checks the request's one Group.
func groupRule(op kmsg.ACLOperation) func(*Broker, *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	return func(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
		if g, ok := stringField(req.Body, "Group"); ok && !b.authorizedGroup(req, g, op) {
			return errorResponse(req.Body, codeGroup), nil
		}
		return nil, nil
	}
}

// groupTopRule is groupRule for the APIs whose denial Kafka answers with
// the top-level code alone (LeaveGroup, OffsetDelete), not one per entry.
func groupTopRule(op kmsg.ACLOperation) func(*Broker, *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	return func(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
		if g, ok := stringField(req.Body, "Group"); ok && !b.authorizedGroup(req, g, op) {
			resp := req.Body.ResponseKind()
			resp.SetVersion(req.Version)
			reflect.ValueOf(resp).Elem().FieldByName("ErrorCode").SetInt(int64(codeGroup))
			return resp, nil
		}
		return nil, nil
	}
}

// txnRule checks the request's one TransactionalID.
func txnRule(op kmsg.ACLOperation) func(*Broker, *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	return func(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
		if id, ok := stringField(req.Body, "TransactionalID"); ok && !b.authorizedTxnID(req, id, op) {
			return errorResponse(req.Body, codeTxnID), nil
		}
		return nil, nil
	}
}

// topicsRule checks op on the topic of each entry of the request's slice
// field (answered in the response's respField).
func topicsRule(field, respField string, op kmsg.ACLOperation) func(*Broker, *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	return func(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
		return b.stripDenied(req, field, respField, "", func(e reflect.Value) int16 {
			name, ok := topicOf(e, b.topicName)
			if !ok || name == "" || b.authorizedTopic(req, name, op) {
				return 0
			}
			return codeTopic
		})
	}
}

// groupsRule checks op on each name of a request's list of names (group
// ids, transactional ids), answered in respField entries whose key field
// is key.
func groupsRule(field, respField, key string, rt kmsg.ACLResourceType, op kmsg.ACLOperation, code int16) func(*Broker, *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	return func(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
		return b.stripDenied(req, field, respField, key, func(e reflect.Value) int16 {
			if e.Kind() == reflect.String && !b.authorized(req, rt, e.String(), op) {
				return code
			}
			return 0
		})
	}
}

// configsRule: DescribeConfigs, AlterConfigs, IncrementalAlterConfigs.
func configsRule(op kmsg.ACLOperation) func(*Broker, *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	return func(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
		return b.stripDenied(req, "Resources", "Resources", "", func(e reflect.Value) int16 {
			rt, rn := e.FieldByName("ResourceType"), e.FieldByName("ResourceName")
			if !rt.IsValid() || !rn.IsValid() {
				return 0
			}
			switch kmsg.ConfigResourceType(rt.Int()) {
			case kmsg.ConfigResourceTypeTopic:
				if !b.authorizedTopic(req, rn.String(), op) {
					return codeTopic
				}
			case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
				if !b.authorizedCluster(req, op) {
					return codeCluster
				}
			}
			return 0
		})
	}
}
