package broker

// The checks of authz_table.go that need more than one field: requests
// with denied entries, and the APIs with their own rules.

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

// stripDenied removes from req's slice field the entries code refuses
// (a non-zero Kafka code) and answers them in the response's respField
// with that code, as Kafka answers denied topics beside served ones. key
// names the response entry's field for an entry that is a bare string
// (a group id); "" for entries that are structs (their identity fields
// are copied, errorResponse). When every entry is refused the handler
// is not called.
func (b *Broker) stripDenied(req *protocol.Request, field, respField, key string, code func(reflect.Value) int16) (kmsg.Response, func(kmsg.Response)) {
	body := reflect.ValueOf(req.Body).Elem()
	f := body.FieldByName(field)
	if !f.IsValid() || f.Kind() != reflect.Slice || f.Len() == 0 {
		return nil, nil
	}
	kept := reflect.MakeSlice(f.Type(), 0, f.Len())
	denied := map[int16]reflect.Value{}
	var codes []int16
	for i := range f.Len() {
		e := f.Index(i)
		c := code(e)
		if c == 0 {
			kept = reflect.Append(kept, e)
			continue
		}
		d, ok := denied[c]
		if !ok {
			d = reflect.MakeSlice(f.Type(), 0, 1)
			codes = append(codes, c)
		}
		denied[c] = reflect.Append(d, e)
	}
	if len(codes) == 0 {
		return nil, nil
	}
	var extra []reflect.Value // slices of response entries
	respType := reflect.ValueOf(req.Body.ResponseKind()).Elem().FieldByName(respField)
	if key != "" && respType.IsValid() && respType.Kind() == reflect.Slice {
		// Bare names (group or transactional ids): one response entry
		// each, keyed by key, with the code.
		for _, c := range codes {
			d := denied[c]
			entries := reflect.MakeSlice(respType.Type(), d.Len(), d.Len())
			for j := range d.Len() {
				e := entries.Index(j)
				if def, ok := e.Addr().Interface().(interface{ Default() }); ok {
					def.Default()
				}
				setScalar(e, key, d.Index(j))
				if ec := e.FieldByName("ErrorCode"); ec.IsValid() {
					ec.SetInt(int64(c))
				}
			}
			extra = append(extra, entries)
		}
		codes = nil
	}
	for _, c := range codes {
		sub := reflect.New(body.Type())
		sub.Elem().Set(body)
		sub.Elem().FieldByName(field).Set(denied[c])
		er := errorResponse(sub.Interface().(kmsg.Request), c)
		entries := reflect.ValueOf(er).Elem().FieldByName(respField)
		if !entries.IsValid() {
			continue
		}
		extra = append(extra, entries)
	}
	appendTo := func(resp kmsg.Response) {
		rf := reflect.ValueOf(resp).Elem().FieldByName(respField)
		if !rf.IsValid() {
			return
		}
		for _, x := range extra {
			rf.Set(reflect.AppendSlice(rf, x))
		}
	}
	if kept.Len() == 0 {
		if p, ok := req.Body.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
			return noResponse{}, nil
		}
		resp := req.Body.ResponseKind()
		resp.SetVersion(req.Version)
		appendTo(resp)
		return resp, nil
	}
	f.Set(kept)
	return nil, appendTo
}

// noResponse marks a denial that gets no answer (Produce with acks=0;
// Kafka drops the records and, for acks=0, answers nothing).
type noResponse struct{ kmsg.Response }

func applyProduce(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	r := req.Body.(*kmsg.ProduceRequest)
	if r.TransactionID != nil && !b.authorizedTxnID(req, *r.TransactionID, aclWrite) {
		if r.Acks == 0 {
			return noResponse{}, nil
		}
		return errorResponse(r, codeTxnID), nil
	}
	// minibroker auto-creates on Produce (Kafka only on Metadata): an
	// unknown topic also needs CREATE, else UNKNOWN_TOPIC_OR_PARTITION
	// and nothing is created.
	return b.stripDenied(req, "Topics", "Topics", "", func(e reflect.Value) int16 {
		name, ok := topicOf(e, b.topicName)
		switch {
		case !ok || name == "":
			return 0
		case !b.authorizedTopic(req, name, aclWrite):
			return codeTopic
		}
		if _, exists := b.Topic(name); !exists && !b.mayCreateTopic(req, name) {
			return kerr.UnknownTopicOrPartition.Code
		}
		return 0
	})
}

func applyFetch(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	r := req.Body.(*kmsg.FetchRequest)
	replica := r.ReplicaID
	if r.Version >= 15 {
		replica = r.ReplicaState.ID
	}
	if replica >= 0 {
		return clusterRule(aclClusterAction)(b, req)
	}
	return topicsRule("Topics", "Topics", aclRead)(b, req)
}

func applyCreateTopics(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	if b.authorizedCluster(req, aclCreate) {
		return nil, nil
	}
	return topicsRule("Topics", "Topics", aclCreate)(b, req)
}

// mayCreateTopic: CREATE on the cluster or on the topic (auto-creation).
func (b *Broker) mayCreateTopic(req *protocol.Request, topic string) bool {
	return b.authorizedCluster(req, aclCreate) || b.authorizedTopic(req, topic, aclCreate)
}

func applyInitProducerID(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	if r.TransactionalID != nil && *r.TransactionalID != "" {
		return txnRule(aclWrite)(b, req)
	}
	if b.authorizedCluster(req, aclIdempotentWrite) || b.authz.AuthorizeAny(principal(req), aclHost(req), kmsg.ACLResourceTypeTopic, aclWrite) {
		return nil, nil
	}
	return errorResponse(r, codeCluster), nil
}

func applyFindCoordinator(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	rt, code := kmsg.ACLResourceTypeGroup, codeGroup
	if r.CoordinatorType == 1 {
		rt, code = kmsg.ACLResourceTypeTransactionalId, codeTxnID
	}
	if r.Version < 4 {
		if !b.authorized(req, rt, r.CoordinatorKey, aclDescribe) {
			return errorResponse(r, code), nil
		}
		return nil, nil
	}
	return groupsRule("CoordinatorKeys", "Coordinators", "Key", rt, aclDescribe, code)(b, req)
}

func applyOffsetFetch(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	r := req.Body.(*kmsg.OffsetFetchRequest)
	if r.Version < 8 {
		if !b.authorizedGroup(req, r.Group, aclDescribe) {
			return errorResponse(r, codeGroup), nil
		}
	}
	return nil, func(resp kmsg.Response) {
		out := resp.(*kmsg.OffsetFetchResponse)
		deny := func(topics any) {
			v := reflect.ValueOf(topics)
			for i := range v.Len() {
				t := v.Index(i)
				if name := t.FieldByName("Topic").String(); !b.authorizedTopic(req, name, aclDescribe) {
					setErrors(out, name, -1, codeTopic, b.topicName)
				}
			}
		}
		deny(out.Topics)
		for i := range out.Groups {
			g := &out.Groups[i]
			if !b.authorizedGroup(req, g.Group, aclDescribe) {
				g.ErrorCode, g.Topics = codeGroup, nil
				continue
			}
			for j := range g.Topics {
				if !b.authorizedTopic(req, g.Topics[j].Topic, aclDescribe) {
					for k := range g.Topics[j].Partitions {
						p := &g.Topics[j].Partitions[k]
						p.ErrorCode, p.Offset, p.LeaderEpoch, p.Metadata = codeTopic, -1, -1, nil
					}
				}
			}
		}
	}
}

func applyListGroups(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	if b.authorizedCluster(req, aclDescribe) {
		return nil, nil
	}
	return nil, func(resp kmsg.Response) {
		out := resp.(*kmsg.ListGroupsResponse)
		kept := out.Groups[:0]
		for _, g := range out.Groups {
			if b.authorizedGroup(req, g.Group, aclDescribe) {
				kept = append(kept, g)
			}
		}
		out.Groups = kept
	}
}

func applyListTransactions(b *Broker, req *protocol.Request) (kmsg.Response, func(kmsg.Response)) {
	return nil, func(resp kmsg.Response) {
		out := resp.(*kmsg.ListTransactionsResponse)
		kept := out.TransactionStates[:0]
		for _, s := range out.TransactionStates {
			if b.authorizedTxnID(req, s.TransactionalID, aclDescribe) {
				kept = append(kept, s)
			}
		}
		out.TransactionStates = kept
	}
}
