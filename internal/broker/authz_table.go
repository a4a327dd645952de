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
// Each rule is typed: rule[*kmsg.XxxRequest] checks that the body is the
// API's kmsg request and the checks read its fields through Go's types
// (no reflection). A rule that cannot read what it checks (a body of
// another type, a request with no group where one is needed, a version
// whose fields it does not know) FAILS CLOSED: the request is denied
// (CLUSTER_AUTHORIZATION_FAILED for the whole request), the failure is
// logged and counted in minibroker_authz_rule_unreadable_total, and every
// test run of the broker fails when that counter is not zero
// (minibrokertest checks it when a broker stops). Never allowed, never a
// panic.
//
// Rules and codes are Kafka's (KafkaApis, Kafka 3.x): a denied topic gets
// TOPIC_AUTHORIZATION_FAILED in its own entry and the rest of the request
// is served; a denied group, transactional id or cluster action fails the
// whole request with GROUP_, TRANSACTIONAL_ID_ or
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/protocol"
)

// authzRule is one API's authorization.
type authzRule struct {
	// needs says what the API requires, as Kafka's docs list it.
	needs string
	// apply checks req: a non-nil deny is the whole answer; otherwise
	// the handler runs (on req, from which apply may have removed the
	// entries it refused) and after, if set, adds their error entries or
	// filters the response, returning the answer to send.
	apply ruleFn
}

// ruleFn is a rule or a part of one.
type ruleFn func(b *Broker, req *protocol.Request) (deny kmsg.Response, after afterFn)

// afterFn adjusts a served response; it returns the answer to send (a
// denial when it cannot read the response: fail closed).
type afterFn func(kmsg.Response) kmsg.Response

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

// authzTable is keyed by API key; every served API has an entry, whose
// rule is typed on that API's request (TestAuthzTableCoversEveryAPI).
var authzTable = map[int16]authzRule{
	0:  rule[*kmsg.ProduceRequest]("WRITE on each topic (TOPIC_AUTHORIZATION_FAILED per topic); transactional: WRITE on the transactional id", applyProduce),
	1:  rule[*kmsg.FetchRequest]("READ on each topic, a fetch session's included, checked in the handler (fetchTopic); a replica fetch (replica id >= 0): CLUSTER_ACTION on the cluster", applyFetch),
	2:  rule[*kmsg.ListOffsetsRequest]("DESCRIBE on each topic", listOffsetsTopics(aclDescribe)),
	3:  inHandler("in the handler: topics the principal may not DESCRIBE are left out of a list-all and TOPIC_AUTHORIZATION_FAILED when named; auto-creation needs CREATE on the cluster or the topic; KIP-430 authorized_operations"),
	8:  rule[*kmsg.OffsetCommitRequest]("READ on the group (GROUP_AUTHORIZATION_FAILED), READ on each topic", groupRule(aclRead), offsetCommitTopics(aclRead)),
	9:  rule[*kmsg.OffsetFetchRequest]("DESCRIBE on the group; DESCRIBE on each topic (others answer TOPIC_AUTHORIZATION_FAILED)", applyOffsetFetch),
	10: rule[*kmsg.FindCoordinatorRequest]("DESCRIBE on the group or the transactional id asked for", applyFindCoordinator),
	11: rule[*kmsg.JoinGroupRequest]("READ on the group", groupRule(aclRead)),
	12: rule[*kmsg.HeartbeatRequest]("READ on the group", groupRule(aclRead)),
	13: rule[*kmsg.LeaveGroupRequest]("READ on the group (denied: the top-level code only, as Kafka)", applyLeaveGroup),
	14: rule[*kmsg.SyncGroupRequest]("READ on the group", groupRule(aclRead)),
	15: inHandler("in the handler: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED per group); KIP-430 authorized_operations"),
	16: rule[*kmsg.ListGroupsRequest]("DESCRIBE on the cluster lists every group; otherwise only the groups the principal may DESCRIBE", applyListGroups),
	17: inHandler("none: before authentication"),
	18: inHandler("none: before authentication"),
	19: rule[*kmsg.CreateTopicsRequest]("CREATE on the cluster or on each topic; a created topic's configs only with DESCRIBE_CONFIGS on it", applyCreateTopics),
	20: rule[*kmsg.DeleteTopicsRequest]("DELETE on each topic, named (v1–v5: a list of names; v6: names or ids)", applyDeleteTopics),
	21: rule[*kmsg.DeleteRecordsRequest]("DELETE on each topic", deleteRecordsTopics(aclDelete)),
	22: rule[*kmsg.InitProducerIDRequest]("transactional: WRITE on the transactional id; idempotent: IDEMPOTENT_WRITE on the cluster or WRITE on any topic (Kafka 3.x, KIP-679)", applyInitProducerID),
	23: rule[*kmsg.OffsetForLeaderEpochRequest]("CLUSTER_ACTION on the cluster, or DESCRIBE on each topic (KIP-320: consumers use it too; the replica id does not matter)", applyOffsetForLeaderEpoch),
	24: rule[*kmsg.AddPartitionsToTxnRequest]("v0–v3: WRITE on the transactional id; WRITE on each topic, all or nothing: a denied topic fails the whole request (OPERATION_NOT_ATTEMPTED for the others); v4+ (broker to broker): CLUSTER_ACTION on the cluster", addPartitionsToTxnRule),
	25: rule[*kmsg.AddOffsetsToTxnRequest]("WRITE on the transactional id; READ on the group", txnRule(aclWrite), groupRule(aclRead)),
	26: rule[*kmsg.EndTxnRequest]("WRITE on the transactional id", txnRule(aclWrite)),
	27: rule[*kmsg.WriteTxnMarkersRequest]("ALTER or CLUSTER_ACTION on the cluster", clusterRule(aclAlter, aclClusterAction)),
	28: rule[*kmsg.TxnOffsetCommitRequest]("WRITE on the transactional id; READ on the group; READ on each topic", txnRule(aclWrite), groupRule(aclRead), txnOffsetCommitTopics(aclRead)),
	29: inHandler("in the handler: DESCRIBE on the cluster"),
	30: inHandler("in the handler: ALTER on the cluster"),
	31: inHandler("in the handler: ALTER on the cluster"),
	32: rule[*kmsg.DescribeConfigsRequest]("DESCRIBE_CONFIGS on each topic or group; on the cluster for a broker, broker-logger or client-metrics resource", describeConfigsResources(aclDescribeConfigs)),
	33: rule[*kmsg.AlterConfigsRequest]("ALTER_CONFIGS on each topic; on the cluster for a broker or broker-logger resource", alterConfigsResources(aclAlterConfigs)),
	34: inHandler("in the handler: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED on every partition)"),
	35: rule[*kmsg.DescribeLogDirsRequest]("DESCRIBE on the cluster", clusterRule(aclDescribe)),
	36: inHandler("none: authentication itself"),
	37: rule[*kmsg.CreatePartitionsRequest]("ALTER on each topic", createPartitionsTopics(aclAlter)),
	38: inHandler("in the handler: none before (Kafka); creating a token for another owner needs CREATE_TOKENS on that User; the answer is always an error (no tokens: delegation.token.secret.key unset)"),
	39: inHandler("in the handler: none (Kafka without a secret key); the answer is always an error"),
	40: inHandler("in the handler: none (Kafka without a secret key); the answer is always an error"),
	41: inHandler("in the handler: Kafka filters tokens by DESCRIBE on each; minibroker never has a token to list"),
	42: rule[*kmsg.DeleteGroupsRequest]("DELETE on each group", applyDeleteGroups),
	43: rule[*kmsg.ElectLeadersRequest]("ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED at the top and on every partition)", clusterRule(aclAlter)),
	44: rule[*kmsg.IncrementalAlterConfigsRequest]("ALTER_CONFIGS on each topic or group; on the cluster for a broker, broker-logger or client-metrics resource", incrementalAlterConfigsResources(aclAlterConfigs)),
	45: rule[*kmsg.AlterPartitionAssignmentsRequest]("ALTER on the cluster", clusterRule(aclAlter)),
	46: rule[*kmsg.ListPartitionReassignmentsRequest]("DESCRIBE on the cluster", clusterRule(aclDescribe)),
	47: rule[*kmsg.OffsetDeleteRequest]("DELETE on the group (denied: the top-level code only, as Kafka); READ on each topic", applyOffsetDeleteGroup, offsetDeleteTopics(aclRead)),
	48: inHandler("in the handler: DESCRIBE_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED)"),
	49: inHandler("in the handler: ALTER_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED on each entry)"),
	50: rule[*kmsg.DescribeUserSCRAMCredentialsRequest]("DESCRIBE on the cluster", applyDescribeUserSCRAM),
	51: rule[*kmsg.AlterUserSCRAMCredentialsRequest]("ALTER on the cluster", applyAlterUserSCRAM),
	55: rule[*kmsg.DescribeQuorumRequest]("DESCRIBE on the cluster", clusterRule(aclDescribe)),
	57: rule[*kmsg.UpdateFeaturesRequest]("ALTER on the cluster", clusterRule(aclAlter)),
	60: inHandler("in the handler: KIP-430 authorized_operations of the cluster; no ACL needed (Kafka)"),
	61: rule[*kmsg.DescribeProducersRequest]("READ on each topic", describeProducersTopics(aclRead)),
	64: rule[*kmsg.UnregisterBrokerRequest]("ALTER on the cluster", clusterRule(aclAlter)),
	65: rule[*kmsg.DescribeTransactionsRequest]("DESCRIBE on each transactional id; a transaction's topics the principal may not DESCRIBE are left out", applyDescribeTransactionIDs, applyDescribeTransactions),
	66: rule[*kmsg.ListTransactionsRequest]("only the transactional ids the principal may DESCRIBE are listed", applyListTransactions),
	68: rule[*kmsg.ConsumerGroupHeartbeatRequest]("READ on the group", groupRule(aclRead)),
	69: inHandler("in the handler: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED per group); KIP-430 authorized_operations"),
	71: inHandler("none (Kafka: any authenticated client)"),
	72: inHandler("none (Kafka: any authenticated client)"),
	76: rule[*kmsg.ShareGroupHeartbeatRequest]("READ on the group", groupRule(aclRead)),
	77: inHandler("in the handler: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED per group); KIP-430 authorized_operations"),
	78: rule[*kmsg.ShareFetchRequest]("READ on the group; READ on each topic, checked in the handler (TOPIC_AUTHORIZATION_FAILED per partition)", groupRule(aclRead)),
	79: rule[*kmsg.ShareAcknowledgeRequest]("READ on the group; READ on each topic, checked in the handler (TOPIC_AUTHORIZATION_FAILED per partition)", groupRule(aclRead)),
	90: inHandler("in the handler: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED per group), DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED per partition)"),
	91: rule[*kmsg.AlterShareGroupOffsetsRequest]("READ on the group; READ on each topic, checked in the handler", groupRule(aclRead)),
	92: rule[*kmsg.DeleteShareGroupOffsetsRequest]("DELETE on the group; READ on each topic, checked in the handler", groupRule(aclDelete)),
	74: rule[*kmsg.ListConfigResourcesRequest]("DESCRIBE_CONFIGS on the cluster", clusterRule(aclDescribeConfigs)),
	80: rule[*kmsg.AddRaftVoterRequest]("ALTER on the cluster", clusterRule(aclAlter)),
	81: rule[*kmsg.RemoveRaftVoterRequest]("ALTER on the cluster", clusterRule(aclAlter)),
	75: inHandler("in the handler: DESCRIBE on each topic (named: TOPIC_AUTHORIZATION_FAILED; all: left out); KIP-430 authorized_operations"),
}

// rule is an API's rule: the request's body must be R (the API's kmsg
// request), else the rule cannot read it and denies; then each part in
// order, the first denial winning.
func rule[R kmsg.Request](needs string, parts ...ruleFn) authzRule {
	whole := chain(parts...)
	return authzRule{needs: needs, apply: func(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
		if _, ok := req.Body.(R); !ok {
			return b.unreadable(req, "the request is not the rule's kmsg type")
		}
		return whole(b, req)
	}}
}

// inHandler is an API whose checks are in its handler (or that needs
// none).
func inHandler(needs string) authzRule { return authzRule{needs: needs} }

// authorizeRequest applies req's rule (authorizer on, request from a
// connection).
func (b *Broker) authorizeRequest(req *protocol.Request) (kmsg.Response, afterFn) {
	if b.authz == nil || req.Session == nil {
		return nil, nil
	}
	if b.knobs.skipAuthzRule != nil && b.knobs.skipAuthzRule(req.Key) {
		return nil, nil
	}
	rule, ok := authzTable[req.Key]
	if !ok {
		// Never reached for a served API (the table test); refuse rather
		// than serve unchecked.
		return b.unreadable(req, "no authzTable entry for the API")
	}
	if rule.apply == nil {
		return nil, nil
	}
	return rule.apply(b, req)
}

// unreadable is a rule's answer when it cannot read what it checks: the
// whole request denied (fail closed), logged and counted. A test run in
// which this happens fails (minibrokertest checks the counter).
func (b *Broker) unreadable(req *protocol.Request, why string) (kmsg.Response, afterFn) {
	return b.unreadableAnswer(req, why), nil
}

func (b *Broker) unreadableAnswer(req *protocol.Request, why string) kmsg.Response {
	name := apiNameOf(req.Key)
	if b.metrics != nil {
		b.metrics.AuthzUnreadable.WithLabelValues(name).Inc()
	}
	b.logger.Error("authorization rule cannot read the request: denied", zap.String("api", name),
		zap.Int16("version", req.Version), zap.String("why", why), zapPrincipal(req))
	if req.Body == nil {
		req.CloseConnection()
		return noResponse{}
	}
	return errorResponse(req.Body, codeCluster)
}

func chain(parts ...ruleFn) ruleFn {
	return func(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
		var afters []afterFn
		for _, p := range parts {
			deny, after := p(b, req)
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
		return nil, func(resp kmsg.Response) kmsg.Response {
			for _, a := range afters {
				resp = a(resp)
			}
			return resp
		}
	}
}

// clusterRule: any one of ops on the cluster.
func clusterRule(ops ...kmsg.ACLOperation) ruleFn {
	return func(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
		for _, op := range ops {
			if b.authorizedCluster(req, op) {
				return nil, nil
			}
		}
		return errorResponse(req.Body, codeCluster), nil
	}
}

// groupOf is the one group a request names.
func groupOf(body kmsg.Request) (string, bool) {
	switch r := body.(type) {
	case *kmsg.OffsetCommitRequest:
		return r.Group, true
	case *kmsg.JoinGroupRequest:
		return r.Group, true
	case *kmsg.HeartbeatRequest:
		return r.Group, true
	case *kmsg.LeaveGroupRequest:
		return r.Group, true
	case *kmsg.SyncGroupRequest:
		return r.Group, true
	case *kmsg.AddOffsetsToTxnRequest:
		return r.Group, true
	case *kmsg.TxnOffsetCommitRequest:
		return r.Group, true
	case *kmsg.OffsetDeleteRequest:
		return r.Group, true
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return r.Group, true
	case *kmsg.ShareGroupHeartbeatRequest:
		return r.GroupID, true
	case *kmsg.ShareFetchRequest:
		return derefString(r.GroupID), true
	case *kmsg.ShareAcknowledgeRequest:
		return derefString(r.GroupID), true
	case *kmsg.AlterShareGroupOffsetsRequest:
		return r.GroupID, true
	case *kmsg.DeleteShareGroupOffsetsRequest:
		return r.GroupID, true
	}
	return "", false
}

// transactionalIDOf is the one transactional id a request names.
func transactionalIDOf(body kmsg.Request) (string, bool) {
	switch r := body.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		// v4+ (KIP-890, broker to broker) carries a list of
		// transactions instead, authorized by CLUSTER_ACTION
		// (addPartitionsToTxnRule), not read here.
		return r.TransactionalID, r.Version <= 3
	case *kmsg.AddOffsetsToTxnRequest:
		return r.TransactionalID, true
	case *kmsg.EndTxnRequest:
		return r.TransactionalID, true
	case *kmsg.TxnOffsetCommitRequest:
		return r.TransactionalID, true
	}
	return "", false
}

// groupRule checks op on the request's one group.
func groupRule(op kmsg.ACLOperation) ruleFn {
	return func(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
		g, ok := groupOf(req.Body)
		switch {
		case !ok:
			return b.unreadable(req, "no group in the request")
		case !b.authorizedGroup(req, g, op):
			return errorResponse(req.Body, codeGroup), nil
		}
		return nil, nil
	}
}

// txnRule checks op on the request's one transactional id.
// addPartitionsToTxnRule is Kafka's: the client form (v0–v3) needs WRITE
// on its transactional id and topics; the broker-to-broker form (v4+)
// CLUSTER_ACTION on the cluster (top-level CLUSTER_AUTHORIZATION_FAILED).
func addPartitionsToTxnRule(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	if r, ok := req.Body.(*kmsg.AddPartitionsToTxnRequest); ok && r.Version >= 4 {
		if b.authorizedCluster(req, aclClusterAction) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		resp.ErrorCode = codeCluster
		return resp, nil
	}
	return chain(txnRule(aclWrite), applyAddPartitionsToTxn)(b, req)
}

func txnRule(op kmsg.ACLOperation) ruleFn {
	return func(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
		id, ok := transactionalIDOf(req.Body)
		switch {
		case !ok:
			return b.unreadable(req, "no transactional id in the request")
		case !b.authorizedTxnID(req, id, op):
			return errorResponse(req.Body, codeTxnID), nil
		}
		return nil, nil
	}
}
