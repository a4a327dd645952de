package broker

// The checks of authz_table.go that need more than one field, and the
// APIs with their own rules. Each reads its request through kmsg's type
// (rule[R] in authz_table.go has checked it; the assertions here are
// checked again and fail closed all the same).

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/protocol"
)

// noResponse marks a denial that gets no answer (Produce with acks=0;
// Kafka drops the records and, for acks=0, answers nothing).
type noResponse struct{ kmsg.Response }

// applyProduce: a request with transactional records needs WRITE on its
// transactional id (none: TRANSACTIONAL_ID_AUTHORIZATION_FAILED), as
// Kafka decides it from the batches, not from the id's presence; WRITE on
// each topic.
func applyProduce(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	r, ok := req.Body.(*kmsg.ProduceRequest)
	if !ok {
		return b.unreadable(req, "not a Produce request")
	}
	if hasTransactionalRecords(r) && (r.TransactionID == nil || !b.authorizedTxnID(req, *r.TransactionID, aclWrite)) {
		if r.Acks == 0 {
			return noResponse{}, nil
		}
		return errorResponse(r, codeTxnID), nil
	}
	// minibroker auto-creates on Produce (Kafka only on Metadata): an
	// unknown topic also needs CREATE, else UNKNOWN_TOPIC_OR_PARTITION
	// and nothing is created.
	list := func(r *kmsg.ProduceRequest) *[]kmsg.ProduceRequestTopic { return &r.Topics }
	resp := func(r *kmsg.ProduceResponse) *[]kmsg.ProduceResponseTopic { return &r.Topics }
	return entriesRule(list, func(b *Broker, req *protocol.Request, t kmsg.ProduceRequestTopic) int16 {
		name, known := b.entryTopic(t.Topic, t.TopicID)
		switch {
		case !known:
			return 0
		case !b.authorizedTopic(req, name, aclWrite):
			return codeTopic
		}
		if _, exists := b.Topic(name); !exists && !b.mayCreateTopic(req, name) {
			return kerr.UnknownTopicOrPartition.Code
		}
		return 0
	}, viaErrorResponse(list, resp), resp)(b, req)
}

// hasTransactionalRecords reports whether a batch of the request is
// transactional (Kafka's RequestUtils.hasTransactionalRecords; a batch
// whose header does not parse is left to the handler's checks).
func hasTransactionalRecords(r *kmsg.ProduceRequest) bool {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			it := batch.NewIter(p.Records)
			for {
				_, h, ok := it.Next()
				if !ok {
					break
				}
				if h.IsTransactional() {
					return true
				}
			}
		}
	}
	return false
}

func applyFetch(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	r, ok := req.Body.(*kmsg.FetchRequest)
	if !ok {
		return b.unreadable(req, "not a Fetch request")
	}
	replica := r.ReplicaID
	if r.Version >= 15 {
		replica = r.ReplicaState.ID
	}
	if replica >= 0 {
		return clusterRule(aclClusterAction)(b, req)
	}
	// READ on each topic is checked by the handler (01_fetch.go,
	// fetchTopic), where the partitions of a fetch session are known:
	// an incremental fetch reads partitions its request does not name.
	return nil, nil
}

// applyCreateTopics: CREATE on the cluster or each topic; a created
// topic's configs (v5+) are shown only to a principal that may
// DESCRIBE_CONFIGS it, else TopicConfigErrorCode is
// TOPIC_AUTHORIZATION_FAILED (Kafka).
func applyCreateTopics(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	hideConfigs := filterResponse(b, req, func(out *kmsg.CreateTopicsResponse) {
		for i := range out.Topics {
			t := &out.Topics[i]
			if t.ErrorCode == 0 && !b.authorizedTopic(req, t.Topic, aclDescribeConfigs) {
				t.Configs, t.ConfigErrorCode = nil, codeTopic
			}
		}
	})
	if b.authorizedCluster(req, aclCreate) {
		return nil, hideConfigs
	}
	return chain(createTopicsTopics(aclCreate), func(*Broker, *protocol.Request) (kmsg.Response, afterFn) {
		return nil, hideConfigs
	})(b, req)
}

// mayCreateTopic: CREATE on the cluster or on the topic (auto-creation).
func (b *Broker) mayCreateTopic(req *protocol.Request, topic string) bool {
	return b.authorizedCluster(req, aclCreate) || b.authorizedTopic(req, topic, aclCreate)
}

func applyInitProducerID(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	r, ok := req.Body.(*kmsg.InitProducerIDRequest)
	if !ok {
		return b.unreadable(req, "not an InitProducerId request")
	}
	if r.TransactionalID != nil && *r.TransactionalID != "" {
		if !b.authorizedTxnID(req, *r.TransactionalID, aclWrite) {
			return errorResponse(r, codeTxnID), nil
		}
		return nil, nil
	}
	if b.authorizedCluster(req, aclIdempotentWrite) || b.authz.AuthorizeAny(principal(req), aclHost(req), kmsg.ACLResourceTypeTopic, aclWrite) {
		return nil, nil
	}
	return errorResponse(r, codeCluster), nil
}

func applyFindCoordinator(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	r, ok := req.Body.(*kmsg.FindCoordinatorRequest)
	if !ok {
		return b.unreadable(req, "not a FindCoordinator request")
	}
	rt, code := kmsg.ACLResourceTypeGroup, codeGroup
	switch r.CoordinatorType {
	case 0:
	case 1:
		rt, code = kmsg.ACLResourceTypeTransactionalId, codeTxnID
	case 2:
		// The share coordinator of a share partition
		// ("group:topicId:partition"), asked by brokers: CLUSTER_ACTION
		// on the cluster (Kafka's KafkaApis).
		return clusterRule(aclClusterAction)(b, req)
	default:
		// A key type minibroker does not serve: INVALID_REQUEST, as
		// Kafka answers a type it does not know; never served unchecked.
		return errorResponse(r, kerr.InvalidRequest.Code), nil
	}
	if r.Version < 4 {
		if !b.authorized(req, rt, r.CoordinatorKey, aclDescribe) {
			return errorResponse(r, code), nil
		}
		return nil, nil
	}
	return findCoordinatorKeys(rt, code)(b, req)
}

// applyOffsetFetch: DESCRIBE on the group, DESCRIBE on each topic, as
// Kafka's KafkaApis answers OffsetFetch. A denied group: v0–v1 answer
// each partition asked for with GROUP_AUTHORIZATION_FAILED and offset -1,
// v2+ the top-level code and no topics, v8+ the group's code. A named
// topic the principal may not DESCRIBE is not read: its partitions answer
// offset -1, leader epoch -1, metadata "" and TOPIC_AUTHORIZATION_FAILED.
// A fetch of every partition (no topics named) leaves such topics out.
func applyOffsetFetch(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	r, ok := req.Body.(*kmsg.OffsetFetchRequest)
	if !ok {
		return b.unreadable(req, "not an OffsetFetch request")
	}
	if r.Version < 8 {
		if !b.authorizedGroup(req, r.Group, aclDescribe) {
			if r.Version < 2 {
				resp := errorResponse(r, codeGroup).(*kmsg.OffsetFetchResponse)
				for i := range resp.Topics {
					for j := range resp.Topics[i].Partitions {
						resp.Topics[i].Partitions[j].Metadata = kmsg.StringPtr("")
					}
				}
				return resp, nil
			}
			resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.SetVersion(r.Version)
			resp.ErrorCode = codeGroup
			return resp, nil
		}
		if r.Topics == nil {
			return nil, filterResponse(b, req, func(out *kmsg.OffsetFetchResponse) {
				out.Topics = keepTopics(b, req, out.Topics, func(t kmsg.OffsetFetchResponseTopic) string { return t.Topic })
			})
		}
		var denied []kmsg.OffsetFetchRequestTopic
		r.Topics, denied = splitTopics(b, req, r.Topics, func(t kmsg.OffsetFetchRequestTopic) string { return t.Topic })
		if len(denied) == 0 {
			return nil, nil
		}
		return nil, filterResponse(b, req, func(out *kmsg.OffsetFetchResponse) {
			if out.ErrorCode != 0 {
				return
			}
			for _, t := range denied {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.Metadata, rp.ErrorCode = p, -1, kmsg.StringPtr(""), codeTopic
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		})
	}
	denied := map[string][]kmsg.OffsetFetchRequestGroupTopic{}
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Topics == nil || !b.authorizedGroup(req, g.Group, aclDescribe) {
			continue
		}
		g.Topics, denied[g.Group] = splitTopics(b, req, g.Topics, func(t kmsg.OffsetFetchRequestGroupTopic) string { return t.Topic })
	}
	return nil, filterResponse(b, req, func(out *kmsg.OffsetFetchResponse) {
		for i := range out.Groups {
			g := &out.Groups[i]
			switch {
			case !b.authorizedGroup(req, g.Group, aclDescribe):
				g.ErrorCode, g.Topics = codeGroup, nil
			case g.ErrorCode != 0:
			default:
				g.Topics = keepTopics(b, req, g.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) string { return t.Topic })
				for _, t := range denied[g.Group] {
					rt := kmsg.NewOffsetFetchResponseGroupTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
						rp.Partition, rp.Offset, rp.Metadata, rp.ErrorCode = p, -1, kmsg.StringPtr(""), codeTopic
						rt.Partitions = append(rt.Partitions, rp)
					}
					g.Topics = append(g.Topics, rt)
				}
			}
		}
	})
}

// splitTopics splits topics into those the principal may DESCRIBE and
// the others (kept non-nil: an empty list still names topics).
func splitTopics[T any](b *Broker, req *protocol.Request, topics []T, name func(T) string) (allowed, denied []T) {
	allowed = make([]T, 0, len(topics))
	for _, t := range topics {
		if b.authorizedTopic(req, name(t), aclDescribe) {
			allowed = append(allowed, t)
		} else {
			denied = append(denied, t)
		}
	}
	return allowed, denied
}

// keepTopics keeps the response topics the principal may DESCRIBE.
func keepTopics[T any](b *Broker, req *protocol.Request, topics []T, name func(T) string) []T {
	kept, _ := splitTopics(b, req, topics, name)
	return kept
}

// applyOffsetForLeaderEpoch: CLUSTER_ACTION on the cluster answers every
// topic; otherwise each topic needs DESCRIBE (KafkaApis; the request's
// replica id plays no part).
func applyOffsetForLeaderEpoch(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	if b.authorizedCluster(req, aclClusterAction) {
		return nil, nil
	}
	return offsetForLeaderEpochTopics(aclDescribe)(b, req)
}

// applyAddPartitionsToTxn: WRITE on each topic, all or nothing as Kafka:
// when one is denied, nothing is added; denied topics answer
// TOPIC_AUTHORIZATION_FAILED, unknown partitions
// UNKNOWN_TOPIC_OR_PARTITION, the others OPERATION_NOT_ATTEMPTED.
func applyAddPartitionsToTxn(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	r, ok := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	if !ok || r.Version > 3 {
		return b.unreadable(req, "not an AddPartitionsToTxn request of v0–v3")
	}
	refused := false
	for _, t := range r.Topics {
		if !b.authorizedTopic(req, t.Topic, aclWrite) {
			refused = true
		}
	}
	if !refused {
		return nil, nil
	}
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	resp.SetVersion(r.Version)
	for _, t := range r.Topics {
		st := kmsg.NewAddPartitionsToTxnResponseTopic()
		st.Topic = t.Topic
		ok := b.authorizedTopic(req, t.Topic, aclWrite)
		for _, p := range t.Partitions {
			sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			sp.Partition, sp.ErrorCode = p, kerr.OperationNotAttempted.Code
			if !ok {
				sp.ErrorCode = codeTopic
			} else if _, exists := b.partitionOf(t.Topic, p); !exists {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// clusterDenied is the message Kafka's CLUSTER_AUTHORIZATION_FAILED
// answers carry.
var clusterDenied = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Description)

// applyDescribeUserSCRAM: DESCRIBE on the cluster. Denied as Kafka's
// DescribeUserScramCredentialsRequest.getErrorResponse: the top-level code
// and one result per user asked for, with the code (and, as Kafka, no
// user name).
func applyDescribeUserSCRAM(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	r, ok := req.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	if !ok {
		return b.unreadable(req, "not a DescribeUserScramCredentials request")
	}
	if b.authorizedCluster(req, aclDescribe) {
		return nil, nil
	}
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	resp.SetVersion(r.Version)
	resp.ErrorCode, resp.ErrorMessage = codeCluster, clusterDenied
	for range r.Users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.ErrorCode, res.ErrorMessage = codeCluster, clusterDenied
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// applyAlterUserSCRAM: ALTER on the cluster. Denied: one result per user
// named (deletions and upsertions, each once, sorted) with the code, as
// Kafka's getErrorResponse; nothing is changed.
func applyAlterUserSCRAM(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	r, ok := req.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	if !ok {
		return b.unreadable(req, "not an AlterUserScramCredentials request")
	}
	if b.authorizedCluster(req, aclAlter) {
		return nil, nil
	}
	users := map[string]bool{}
	for _, d := range r.Deletions {
		users[d.Name] = true
	}
	for _, u := range r.Upsertions {
		users[u.Name] = true
	}
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	resp.SetVersion(r.Version)
	for _, u := range slices.Sorted(maps.Keys(users)) {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = u, codeCluster, clusterDenied
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// applyDescribeTransactions leaves out of each described transaction the
// topics the principal may not DESCRIBE (Kafka).
func applyDescribeTransactions(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	return nil, filterResponse(b, req, func(out *kmsg.DescribeTransactionsResponse) {
		for i := range out.TransactionStates {
			s := &out.TransactionStates[i]
			s.Topics = keepTopics(b, req, s.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) string { return t.Topic })
		}
	})
}

func applyListGroups(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	if b.authorizedCluster(req, aclDescribe) {
		return nil, nil
	}
	return nil, filterResponse(b, req, func(out *kmsg.ListGroupsResponse) {
		kept := out.Groups[:0]
		for _, g := range out.Groups {
			if b.authorizedGroup(req, g.Group, aclDescribe) {
				kept = append(kept, g)
			}
		}
		out.Groups = kept
	})
}

func applyListTransactions(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	return nil, filterResponse(b, req, func(out *kmsg.ListTransactionsResponse) {
		kept := out.TransactionStates[:0]
		for _, s := range out.TransactionStates {
			if b.authorizedTxnID(req, s.TransactionalID, aclDescribe) {
				kept = append(kept, s)
			}
		}
		out.TransactionStates = kept
	})
}

// applyLeaveGroup: READ on the group; denied, the top-level code alone
// (Kafka), not one per member.
func applyLeaveGroup(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	r, ok := req.Body.(*kmsg.LeaveGroupRequest)
	if !ok {
		return b.unreadable(req, "not a LeaveGroup request")
	}
	if b.authorizedGroup(req, r.Group, aclRead) {
		return nil, nil
	}
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.SetVersion(r.Version)
	resp.ErrorCode = codeGroup
	return resp, nil
}

// applyOffsetDeleteGroup: DELETE on the group; denied, the top-level
// code alone (Kafka).
func applyOffsetDeleteGroup(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	r, ok := req.Body.(*kmsg.OffsetDeleteRequest)
	if !ok {
		return b.unreadable(req, "not an OffsetDelete request")
	}
	if b.authorizedGroup(req, r.Group, aclDelete) {
		return nil, nil
	}
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.SetVersion(r.Version)
	resp.ErrorCode = codeGroup
	return resp, nil
}
