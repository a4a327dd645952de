package broker

// The fixture of the per-API authorization tests (authz_*_test.go): a
// broker with a SASL_PLAINTEXT listener (PLAIN users admin, a super user,
// alice and bob), the authorizer on, and the skipAuthzRule seam, so each
// test can send the same raw request with one API's authzTable rule
// switched off: the negative control.

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/minibroker/minibroker/internal/config"
)

const authzJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`

type authzEnv struct {
	root *testing.T // owns the broker and the clients
	t    *testing.T // the running (sub)test
	b    *Broker
	addr string
	// skip is the API key whose authzTable rule is switched off (-1: none).
	skip atomic.Int32
	// panicKey is the API key whose handler panics on purpose
	// (panicInHandler; -1: none).
	panicKey atomic.Int32
	mu       sync.Mutex
	clients  map[string]*kgo.Client
}

// startAuthz starts the fixture; on false leaves the authorizer off.
func startAuthz(t *testing.T, on bool, sets ...string) *authzEnv {
	t.Helper()
	e := &authzEnv{root: t, t: t, clients: map[string]*kgo.Client{}}
	e.skip.Store(-1)
	e.panicKey.Store(-1)
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = t.TempDir(), "127.0.0.1:0", ""
	base := []string{
		"listeners=SASL_PLAINTEXT://127.0.0.1:0",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + authzJAAS,
		"super.users=User:admin",
	}
	if on {
		base = append(base, "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer")
	}
	for _, kv := range append(base, sets...) {
		if err := cfg.SetPair(kv); err != nil {
			t.Fatal(err)
		}
	}
	b, err := newBroker(Options{Config: cfg}, func(b *Broker) {
		b.knobs.skipAuthzRule = func(key int16) bool { return int32(key) == e.skip.Load() }
		b.knobs.panicInHandler = func(key int16) bool { return int32(key) == e.panicKey.Load() }
	})
	if err != nil {
		t.Fatal(err)
	}
	b.Serve()
	t.Cleanup(func() { b.Close(context.Background()) })
	e.b = b
	for _, l := range b.Listeners() {
		if l.Name == "SASL_PLAINTEXT" {
			e.addr = l.Advertised
		}
	}
	if e.addr == "" {
		t.Fatalf("no SASL_PLAINTEXT listener in %+v", b.Listeners())
	}
	return e
}

// client is user's kgo client; with pin (key, version) pairs, one that
// sends those APIs at most at those versions.
func (e *authzEnv) client(user string, pin ...int16) *kgo.Client {
	e.t.Helper()
	id := fmt.Sprint(user, pin)
	e.mu.Lock()
	defer e.mu.Unlock()
	if cl, ok := e.clients[id]; ok {
		return cl
	}
	opts := []kgo.Opt{kgo.SeedBrokers(e.addr), kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)}
	if len(pin) > 0 {
		vs := kversion.Stable()
		for i := 0; i+1 < len(pin); i += 2 {
			vs.SetMaxKeyVersion(pin[i], pin[i+1])
		}
		opts = append(opts, kgo.MaxVersions(vs))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.root.Cleanup(cl.Close)
	e.clients[id] = cl
	return cl
}

// send sends req as user straight to the broker (no coordinator lookup,
// no Metadata of kgo's own first); pin as in client.
func (e *authzEnv) send(user string, req kmsg.Request, pin ...int16) kmsg.Response {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := e.client(user, pin...).SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		e.t.Fatalf("%s as %s: %v", kmsg.NameForKey(req.Key()), user, err)
	}
	return resp
}

// grant is one ALLOW ACL for a principal on a resource: prefixed when
// prefixed, else literal.
type grant struct {
	rt       kmsg.ACLResourceType
	name     string
	prefixed bool
	ops      []kmsg.ACLOperation
}

func topicACL(name string, ops ...kmsg.ACLOperation) grant {
	return grant{kmsg.ACLResourceTypeTopic, name, false, ops}
}

func groupsACL(prefix string, ops ...kmsg.ACLOperation) grant {
	return grant{kmsg.ACLResourceTypeGroup, prefix, true, ops}
}

func txnACL(prefix string, ops ...kmsg.ACLOperation) grant {
	return grant{kmsg.ACLResourceTypeTransactionalId, prefix, true, ops}
}

func clusterACL(ops ...kmsg.ACLOperation) grant {
	return grant{kmsg.ACLResourceTypeCluster, "kafka-cluster", false, ops}
}

// setACLs replaces user's ACLs with grants (through DeleteAcls and
// CreateAcls as admin).
func (e *authzEnv) setACLs(user string, grants ...grant) {
	e.t.Helper()
	principal := "User:" + user
	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	f.Operation, f.PermissionType, f.Principal = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny, &principal
	del.Filters = append(del.Filters, f)
	if r := e.send("admin", del).(*kmsg.DeleteACLsResponse); len(r.Results) != 1 || r.Results[0].ErrorCode != 0 {
		e.t.Fatalf("delete %s's ACLs: %+v", user, r.Results)
	}
	if len(grants) == 0 {
		return
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for _, g := range grants {
		for _, op := range g.ops {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = g.rt, g.name, kmsg.ACLResourcePatternTypeLiteral
			if g.prefixed {
				c.ResourcePatternType = kmsg.ACLResourcePatternTypePrefixed
			}
			c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, c)
		}
	}
	for _, r := range e.send("admin", req).(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			e.t.Fatalf("create %s's ACLs: %v", user, kerr.ErrorForCode(r.ErrorCode))
		}
	}
}

func (e *authzEnv) createTopic(name string, records int) {
	e.t.Helper()
	if _, err := e.b.CreateTopic(name, 1, nil, [16]byte{}, false); err != nil {
		e.t.Fatal(err)
	}
	if records == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for i := range records {
		r := &kgo.Record{Topic: name, Value: fmt.Appendf(nil, "v%d", i)}
		if err := e.client("admin").ProduceSync(ctx, r).FirstErr(); err != nil {
			e.t.Fatal(err)
		}
	}
}

// initProducer is InitProducerId for id, as admin: producer id and
// epoch. (CONCURRENT_TRANSACTIONS, while an open transaction of id is
// being aborted, is retried.)
func (e *authzEnv) initProducer(id string) (int64, int16) {
	e.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := e.send("admin", req).(*kmsg.InitProducerIDResponse)
		switch {
		case r.ErrorCode == 0:
			return r.ProducerID, r.ProducerEpoch
		case r.ErrorCode != kerr.ConcurrentTransactions.Code || time.Now().After(deadline):
			e.t.Fatalf("InitProducerId %s: %v", id, kerr.ErrorForCode(r.ErrorCode))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// commitOffset commits offset for group on topic's partition 0 as admin
// (a simple consumer group: generation -1).
func (e *authzEnv) commitOffset(group, topic string, offset int64) {
	e.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r := e.send("admin", req).(*kmsg.OffsetCommitResponse)
	if c := r.Topics[0].Partitions[0].ErrorCode; c != 0 {
		e.t.Fatalf("commit %s %s: %v", group, topic, kerr.ErrorForCode(c))
	}
}

// committed is admin's view of group's offset of topic's partition 0
// (with require_stable: a staged transactional offset shows as
// UNSTABLE_OFFSET_COMMIT).
func (e *authzEnv) committed(group, topic string) string {
	e.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = true
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic, gt.Partitions = topic, []int32{0}
	g.Topics = append(g.Topics, gt)
	req.Groups = append(req.Groups, g)
	r := e.send("admin", req).(*kmsg.OffsetFetchResponse)
	p := r.Groups[0].Topics[0].Partitions[0]
	return fmt.Sprintf("offset %d code %d", p.Offset, p.ErrorCode)
}

// codes are the error codes of a response's partitions (or resources),
// in order, by topic: "t:29 u:55".
func codesOf(resp kmsg.Response) string {
	s := ""
	add := func(topic string, c int16) {
		if s != "" {
			s += " "
		}
		s += fmt.Sprintf("%s:%d", topic, c)
	}
	switch r := resp.(type) {
	case *kmsg.AddPartitionsToTxnResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(t.Topic, p.ErrorCode)
			}
		}
	case *kmsg.TxnOffsetCommitResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(t.Topic, p.ErrorCode)
			}
		}
	case *kmsg.OffsetDeleteResponse:
		add("group", r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(t.Topic, p.ErrorCode)
			}
		}
	case *kmsg.WriteTxnMarkersResponse:
		for _, m := range r.Markers {
			for _, t := range m.Topics {
				for _, p := range t.Partitions {
					add(t.Topic, p.ErrorCode)
				}
			}
		}
	case *kmsg.DescribeProducersResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(t.Topic, p.ErrorCode)
			}
		}
	case *kmsg.OffsetForLeaderEpochResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(fmt.Sprintf("%s(epoch %d end %d)", t.Topic, p.LeaderEpoch, p.EndOffset), p.ErrorCode)
			}
		}
	case *kmsg.ListOffsetsResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(fmt.Sprintf("%s(ts %d offset %d)", t.Topic, p.Timestamp, p.Offset), p.ErrorCode)
			}
		}
	case *kmsg.DeleteRecordsResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(fmt.Sprintf("%s(low %d)", t.Topic, p.LowWatermark), p.ErrorCode)
			}
		}
	case *kmsg.AlterConfigsResponse:
		for _, c := range r.Resources {
			add(c.ResourceName, c.ErrorCode)
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, c := range r.Resources {
			add(c.ResourceName, c.ErrorCode)
		}
	case *kmsg.ProduceResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(t.Topic, p.ErrorCode)
			}
		}
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			add(fmt.Sprintf("%s(configs %v code %d)", t.Topic, len(t.Configs) > 0, t.ConfigErrorCode), t.ErrorCode)
		}
	case *kmsg.AddOffsetsToTxnResponse:
		add("txn", r.ErrorCode)
	case *kmsg.DescribeLogDirsResponse:
		add(fmt.Sprintf("dirs(%d)", len(r.Dirs)), r.ErrorCode)
	case *kmsg.DescribeUserSCRAMCredentialsResponse:
		add("all", r.ErrorCode)
		for _, u := range r.Results {
			add("user("+u.User+")", u.ErrorCode)
		}
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		for _, u := range r.Results {
			add(u.User, u.ErrorCode)
		}
	case *kmsg.ListTransactionsResponse:
		add("list", r.ErrorCode)
		for _, s := range r.TransactionStates {
			add(s.TransactionalID, 0)
		}
	case *kmsg.DescribeTransactionsResponse:
		for _, s := range r.TransactionStates {
			add(s.TransactionalID, s.ErrorCode)
			for _, t := range s.Topics {
				add("  "+t.Topic, 0)
			}
		}
	default:
		return fmt.Sprintf("%T", resp)
	}
	return s
}

// oneRecordBatch is a v2 batch of one record: from producer pid at epoch
// (sequence 0), transactional or not; pid -1 for none.
func oneRecordBatch(pid int64, epoch int16, transactional bool) []byte {
	r := kmsg.Record{Value: []byte("v")}
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	recs := r.AppendTo(nil)
	now := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{Magic: 2, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: 0, NumRecords: 1, Records: recs}
	if pid < 0 {
		rb.ProducerEpoch, rb.FirstSequence = -1, -1
	}
	if transactional {
		rb.Attributes = 0x10
	}
	rb.Length = int32(61 - 12 + len(recs))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// produceReq produces raw to topic's partition 0 (acks all), with a
// transactional id when txnID is not "".
func produceReq(topic, txnID string, raw []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	if txnID != "" {
		req.TransactionID = &txnID
	}
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}
