package broker

// Per-entry checks of authz_table.go: the topics (groups, transactional
// ids, config resources) a request lists, each checked on its own. The
// entries refused are taken out of the request before the handler runs
// and answered beside the served ones with their code, as Kafka answers
// a denied topic. Each API names its request's list and its response's
// list through typed accessors (no reflection); the answer for refused
// entries is errorResponse's answer to a copy of the request holding
// only them, or built by hand where the entries are bare names.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

// refusedEntries are a request's entries refused with one code.
type refusedEntries[E any] struct {
	code    int16
	entries []E
}

// entriesRule checks each entry of the request's list (code: 0 serves
// it). Refused entries leave the request and are answered in the
// response's list (answer; false when it cannot build them: fail
// closed). When every entry is refused the handler is not called.
func entriesRule[PReq kmsg.Request, E any, PResp kmsg.Response, RE any](
	list func(PReq) *[]E,
	code func(b *Broker, req *protocol.Request, e E) int16,
	answer func(r PReq, refused []E, code int16) ([]RE, bool),
	respList func(PResp) *[]RE,
) ruleFn {
	return func(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
		r, ok := req.Body.(PReq)
		if !ok {
			return b.unreadable(req, "the request is not the entries' kmsg type")
		}
		entries := list(r)
		if len(*entries) == 0 {
			return nil, nil
		}
		kept := make([]E, 0, len(*entries))
		var refused []refusedEntries[E]
	next:
		for _, e := range *entries {
			c := code(b, req, e)
			if c == 0 {
				kept = append(kept, e)
				continue
			}
			for i := range refused {
				if refused[i].code == c {
					refused[i].entries = append(refused[i].entries, e)
					continue next
				}
			}
			refused = append(refused, refusedEntries[E]{c, []E{e}})
		}
		if len(refused) == 0 {
			return nil, nil
		}
		var extra []RE
		for _, d := range refused {
			es, ok := answer(r, d.entries, d.code)
			if !ok {
				return b.unreadable(req, "cannot answer the refused entries")
			}
			extra = append(extra, es...)
		}
		add := func(resp kmsg.Response) kmsg.Response {
			out, ok := resp.(PResp)
			if !ok {
				return b.unreadableAnswer(req, "the response is not the entries' kmsg type")
			}
			l := respList(out)
			*l = append(*l, extra...)
			return out
		}
		if len(kept) == 0 {
			if p, ok := req.Body.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
				return noResponse{}, nil
			}
			resp := r.ResponseKind()
			resp.SetVersion(req.Version)
			return add(resp), nil
		}
		*entries = kept
		return nil, add
	}
}

// viaErrorResponse answers refused entries with errorResponse's answer
// to a copy of the request that holds only them.
func viaErrorResponse[Req any, PReq interface {
	*Req
	kmsg.Request
}, E any, PResp kmsg.Response, RE any](list func(PReq) *[]E, respList func(PResp) *[]RE) func(PReq, []E, int16) ([]RE, bool) {
	return func(r PReq, refused []E, code int16) ([]RE, bool) {
		sub := PReq(new(Req))
		*sub = *r
		*list(sub) = refused
		er, ok := errorResponse(sub, code).(PResp)
		if !ok {
			return nil, false
		}
		return *respList(er), true
	}
}

// entryTopic is the topic an entry names: its name, else the topic its
// id resolves to. known is false for an id this broker does not know:
// nothing to authorize, the handler answers UNKNOWN_TOPIC_ID and reveals
// nothing. An entry with neither is checked as the topic "" (denied
// unless an ACL allows every topic).
func (b *Broker) entryTopic(name string, id [16]byte) (topic string, known bool) {
	if name == "" && id != ([16]byte{}) {
		n := b.topicName(id)
		return n, n != ""
	}
	return name, true
}

// topicEntries: op on the topic of each entry of the request's list.
func topicEntries[Req any, PReq interface {
	*Req
	kmsg.Request
}, E any, PResp kmsg.Response, RE any](op kmsg.ACLOperation, list func(PReq) *[]E, topic func(E) (string, [16]byte), respList func(PResp) *[]RE) ruleFn {
	return entriesRule(list, func(b *Broker, req *protocol.Request, e E) int16 {
		name, known := b.entryTopic(topic(e))
		if !known || b.authorizedTopic(req, name, op) {
			return 0
		}
		return codeTopic
	}, viaErrorResponse[Req](list, respList), respList)
}

func byName(name string) (string, [16]byte) { return name, [16]byte{} }

func listOffsetsTopics(op kmsg.ACLOperation) ruleFn {
	return topicEntries(op, func(r *kmsg.ListOffsetsRequest) *[]kmsg.ListOffsetsRequestTopic { return &r.Topics },
		func(t kmsg.ListOffsetsRequestTopic) (string, [16]byte) { return byName(t.Topic) },
		func(r *kmsg.ListOffsetsResponse) *[]kmsg.ListOffsetsResponseTopic { return &r.Topics })
}

func offsetCommitTopics(op kmsg.ACLOperation) ruleFn {
	return topicEntries(op, func(r *kmsg.OffsetCommitRequest) *[]kmsg.OffsetCommitRequestTopic { return &r.Topics },
		func(t kmsg.OffsetCommitRequestTopic) (string, [16]byte) { return t.Topic, t.TopicID },
		func(r *kmsg.OffsetCommitResponse) *[]kmsg.OffsetCommitResponseTopic { return &r.Topics })
}

func createTopicsTopics(op kmsg.ACLOperation) ruleFn {
	return topicEntries(op, func(r *kmsg.CreateTopicsRequest) *[]kmsg.CreateTopicsRequestTopic { return &r.Topics },
		func(t kmsg.CreateTopicsRequestTopic) (string, [16]byte) { return byName(t.Topic) },
		func(r *kmsg.CreateTopicsResponse) *[]kmsg.CreateTopicsResponseTopic { return &r.Topics })
}

func deleteRecordsTopics(op kmsg.ACLOperation) ruleFn {
	return topicEntries(op, func(r *kmsg.DeleteRecordsRequest) *[]kmsg.DeleteRecordsRequestTopic { return &r.Topics },
		func(t kmsg.DeleteRecordsRequestTopic) (string, [16]byte) { return byName(t.Topic) },
		func(r *kmsg.DeleteRecordsResponse) *[]kmsg.DeleteRecordsResponseTopic { return &r.Topics })
}

func offsetForLeaderEpochTopics(op kmsg.ACLOperation) ruleFn {
	return topicEntries(op, func(r *kmsg.OffsetForLeaderEpochRequest) *[]kmsg.OffsetForLeaderEpochRequestTopic { return &r.Topics },
		func(t kmsg.OffsetForLeaderEpochRequestTopic) (string, [16]byte) { return byName(t.Topic) },
		func(r *kmsg.OffsetForLeaderEpochResponse) *[]kmsg.OffsetForLeaderEpochResponseTopic { return &r.Topics })
}

func txnOffsetCommitTopics(op kmsg.ACLOperation) ruleFn {
	return topicEntries(op, func(r *kmsg.TxnOffsetCommitRequest) *[]kmsg.TxnOffsetCommitRequestTopic { return &r.Topics },
		func(t kmsg.TxnOffsetCommitRequestTopic) (string, [16]byte) { return t.Topic, t.TopicID },
		func(r *kmsg.TxnOffsetCommitResponse) *[]kmsg.TxnOffsetCommitResponseTopic { return &r.Topics })
}

func createPartitionsTopics(op kmsg.ACLOperation) ruleFn {
	return topicEntries(op, func(r *kmsg.CreatePartitionsRequest) *[]kmsg.CreatePartitionsRequestTopic { return &r.Topics },
		func(t kmsg.CreatePartitionsRequestTopic) (string, [16]byte) { return byName(t.Topic) },
		func(r *kmsg.CreatePartitionsResponse) *[]kmsg.CreatePartitionsResponseTopic { return &r.Topics })
}

func offsetDeleteTopics(op kmsg.ACLOperation) ruleFn {
	return topicEntries(op, func(r *kmsg.OffsetDeleteRequest) *[]kmsg.OffsetDeleteRequestTopic { return &r.Topics },
		func(t kmsg.OffsetDeleteRequestTopic) (string, [16]byte) { return byName(t.Topic) },
		func(r *kmsg.OffsetDeleteResponse) *[]kmsg.OffsetDeleteResponseTopic { return &r.Topics })
}

func describeProducersTopics(op kmsg.ACLOperation) ruleFn {
	return topicEntries(op, func(r *kmsg.DescribeProducersRequest) *[]kmsg.DescribeProducersRequestTopic { return &r.Topics },
		func(t kmsg.DescribeProducersRequestTopic) (string, [16]byte) { return byName(t.Topic) },
		func(r *kmsg.DescribeProducersResponse) *[]kmsg.DescribeProducersResponseTopic { return &r.Topics })
}

// applyDeleteTopics: DELETE on each topic. v1–v5 name topics in
// TopicNames (a list of strings), v6 in Topics (a name or an id); both
// lists are checked whatever the version. An entry of v6 with neither a
// name nor an id is left to the handler, which refuses it
// (INVALID_REQUEST, as Kafka) without acting.
func applyDeleteTopics(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	respTopics := func(r *kmsg.DeleteTopicsResponse) *[]kmsg.DeleteTopicsResponseTopic { return &r.Topics }
	names := entriesRule(func(r *kmsg.DeleteTopicsRequest) *[]string { return &r.TopicNames },
		func(b *Broker, req *protocol.Request, name string) int16 {
			if b.authorizedTopic(req, name, aclDelete) {
				return 0
			}
			return codeTopic
		},
		func(_ *kmsg.DeleteTopicsRequest, refused []string, code int16) ([]kmsg.DeleteTopicsResponseTopic, bool) {
			out := make([]kmsg.DeleteTopicsResponseTopic, len(refused))
			for i, n := range refused {
				out[i] = kmsg.NewDeleteTopicsResponseTopic()
				out[i].Topic, out[i].ErrorCode = kmsg.StringPtr(n), code
			}
			return out, true
		}, respTopics)
	structs := entriesRule(func(r *kmsg.DeleteTopicsRequest) *[]kmsg.DeleteTopicsRequestTopic { return &r.Topics },
		func(b *Broker, req *protocol.Request, t kmsg.DeleteTopicsRequestTopic) int16 {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			if name == "" && t.TopicID == ([16]byte{}) {
				return 0
			}
			n, known := b.entryTopic(name, t.TopicID)
			if !known || b.authorizedTopic(req, n, aclDelete) {
				return 0
			}
			return codeTopic
		},
		func(_ *kmsg.DeleteTopicsRequest, refused []kmsg.DeleteTopicsRequestTopic, code int16) ([]kmsg.DeleteTopicsResponseTopic, bool) {
			out := make([]kmsg.DeleteTopicsResponseTopic, len(refused))
			for i, t := range refused {
				out[i] = kmsg.NewDeleteTopicsResponseTopic()
				out[i].Topic, out[i].TopicID, out[i].ErrorCode = t.Topic, t.TopicID, code
			}
			return out, true
		}, respTopics)
	return chain(names, structs)(b, req)
}

// configResourceCode is op on a config resource, as Kafka's
// ConfigAdminManager checks it: a topic on the topic, a group (Kafka 4's
// group configs) on the group, a broker, broker logger or client-metrics
// resource on the cluster. Another type is refused INVALID_REQUEST, as
// Kafka refuses it, and never served.
func configResourceCode(b *Broker, req *protocol.Request, op kmsg.ACLOperation, rt kmsg.ConfigResourceType, name string) int16 {
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
		if !b.authorizedTopic(req, name, op) {
			return codeTopic
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !b.authorizedGroup(req, name, op) {
			return codeGroup
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		if !b.authorizedCluster(req, op) {
			return codeCluster
		}
	default:
		return kerr.InvalidRequest.Code
	}
	return 0
}

func describeConfigsResources(op kmsg.ACLOperation) ruleFn {
	list := func(r *kmsg.DescribeConfigsRequest) *[]kmsg.DescribeConfigsRequestResource { return &r.Resources }
	resp := func(r *kmsg.DescribeConfigsResponse) *[]kmsg.DescribeConfigsResponseResource { return &r.Resources }
	return entriesRule(list, func(b *Broker, req *protocol.Request, e kmsg.DescribeConfigsRequestResource) int16 {
		return configResourceCode(b, req, op, e.ResourceType, e.ResourceName)
	}, viaErrorResponse(list, resp), resp)
}

func alterConfigsResources(op kmsg.ACLOperation) ruleFn {
	list := func(r *kmsg.AlterConfigsRequest) *[]kmsg.AlterConfigsRequestResource { return &r.Resources }
	resp := func(r *kmsg.AlterConfigsResponse) *[]kmsg.AlterConfigsResponseResource { return &r.Resources }
	return entriesRule(list, func(b *Broker, req *protocol.Request, e kmsg.AlterConfigsRequestResource) int16 {
		return configResourceCode(b, req, op, e.ResourceType, e.ResourceName)
	}, viaErrorResponse(list, resp), resp)
}

func incrementalAlterConfigsResources(op kmsg.ACLOperation) ruleFn {
	list := func(r *kmsg.IncrementalAlterConfigsRequest) *[]kmsg.IncrementalAlterConfigsRequestResource {
		return &r.Resources
	}
	resp := func(r *kmsg.IncrementalAlterConfigsResponse) *[]kmsg.IncrementalAlterConfigsResponseResource {
		return &r.Resources
	}
	return entriesRule(list, func(b *Broker, req *protocol.Request, e kmsg.IncrementalAlterConfigsRequestResource) int16 {
		return configResourceCode(b, req, op, e.ResourceType, e.ResourceName)
	}, viaErrorResponse(list, resp), resp)
}

// namesRule checks op on each name of a request's list of names (group
// ids, transactional ids), answered by answer(name, code) in the
// response's list.
func namesRule[PReq kmsg.Request, PResp kmsg.Response, RE any](rt kmsg.ACLResourceType, op kmsg.ACLOperation, code int16,
	list func(PReq) *[]string, respList func(PResp) *[]RE, answer func(name string, code int16) RE) ruleFn {
	return entriesRule(list, func(b *Broker, req *protocol.Request, name string) int16 {
		if b.authorized(req, rt, name, op) {
			return 0
		}
		return code
	}, func(_ PReq, refused []string, code int16) ([]RE, bool) {
		out := make([]RE, len(refused))
		for i, n := range refused {
			out[i] = answer(n, code)
		}
		return out, true
	}, respList)
}

// applyDeleteGroups: DELETE on each group.
func applyDeleteGroups(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	return namesRule(kmsg.ACLResourceTypeGroup, aclDelete, codeGroup,
		func(r *kmsg.DeleteGroupsRequest) *[]string { return &r.Groups },
		func(r *kmsg.DeleteGroupsResponse) *[]kmsg.DeleteGroupsResponseGroup { return &r.Groups },
		func(g string, code int16) kmsg.DeleteGroupsResponseGroup {
			e := kmsg.NewDeleteGroupsResponseGroup()
			e.Group, e.ErrorCode = g, code
			return e
		})(b, req)
}

// applyDescribeTransactionIDs: DESCRIBE on each transactional id.
func applyDescribeTransactionIDs(b *Broker, req *protocol.Request) (kmsg.Response, afterFn) {
	return namesRule(kmsg.ACLResourceTypeTransactionalId, aclDescribe, codeTxnID,
		func(r *kmsg.DescribeTransactionsRequest) *[]string { return &r.TransactionalIDs },
		func(r *kmsg.DescribeTransactionsResponse) *[]kmsg.DescribeTransactionsResponseTransactionState {
			return &r.TransactionStates
		},
		func(id string, code int16) kmsg.DescribeTransactionsResponseTransactionState {
			e := kmsg.NewDescribeTransactionsResponseTransactionState()
			e.TransactionalID, e.ErrorCode = id, code
			return e
		})(b, req)
}

// findCoordinatorKeys: FindCoordinator v4+, DESCRIBE on each key (a
// group or a transactional id); a refused key answers node -1, port -1
// (Kafka's error answer).
func findCoordinatorKeys(rt kmsg.ACLResourceType, code int16) ruleFn {
	return namesRule(rt, aclDescribe, code,
		func(r *kmsg.FindCoordinatorRequest) *[]string { return &r.CoordinatorKeys },
		func(r *kmsg.FindCoordinatorResponse) *[]kmsg.FindCoordinatorResponseCoordinator {
			return &r.Coordinators
		},
		func(key string, code int16) kmsg.FindCoordinatorResponseCoordinator {
			e := kmsg.NewFindCoordinatorResponseCoordinator()
			e.Key, e.NodeID, e.Port, e.ErrorCode = key, -1, -1, code
			return e
		})
}

// filterResponse is an after step that edits the served response; a
// response of another type is not read: the answer becomes a denial.
func filterResponse[R kmsg.Response](b *Broker, req *protocol.Request, f func(R)) afterFn {
	return func(resp kmsg.Response) kmsg.Response {
		out, ok := resp.(R)
		if !ok {
			return b.unreadableAnswer(req, "the response is not the rule's kmsg type")
		}
		f(out)
		return out
	}
}

// apiNameOf is Kafka's name of an API key (its number when kmsg has no
// name for it).
func apiNameOf(key int16) string {
	if n := kmsg.NameForKey(key); n != "" {
		return n
	}
	return strconv.Itoa(int(key))
}
