package coordinator

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"sync"
	"testing"
)

// TestPartitionFor: Kafka's partitionFor(groupId) with Java's
// String.hashCode over UTF-16 code units ("hello" is 99162322 in Java,
// "polygenelubricants" Integer.MIN_VALUE, which Utils.abs maps to 0;
// the expected partitions were computed independently of this code).
func TestPartitionFor(t *testing.T) {
	for _, c := range []struct {
		id   string
		hash int32
		p    int32
	}{
		{"hello", 99162322, 22},
		{"polygenelubricants", -2147483648, 0},
		{"Aa", 2112, 12},
		{"BB", 2112, 12},
		{"😀", 1772899, 49}, // a surrogate pair: two code units
		{"été", 227742, 42},
		{"my-consumer-group-zzzz", -305999452, 2},
		{"", 0, 0},
	} {
		if h := javaStringHash(c.id); h != c.hash {
			t.Errorf("hash(%q) = %d, want %d", c.id, h, c.hash)
		}
		if p := PartitionFor(c.id, 50); p != c.p {
			t.Errorf("PartitionFor(%q, 50) = %d, want %d", c.id, p, c.p)
		}
	}
}

// memTopic is an OffsetsTopic in memory: each partition a list of
// batches.
type memTopic struct {
	mu    sync.Mutex
	parts [][]memBatch
}

type memBatch struct {
	b    TopicBatch
	recs []TopicRecord
}

func newMemTopic(n int) *memTopic { return &memTopic{parts: make([][]memBatch, n)} }

func (m *memTopic) Partitions() int32 { return int32(len(m.parts)) }

func (m *memTopic) end(p int32) int64 {
	n := int64(0)
	for _, b := range m.parts[p] {
		n += int64(max(len(b.recs), 1))
	}
	return n
}

func (m *memTopic) Append(p int32, recs []TopicRecord, txn TopicProducer) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.parts[p] = append(m.parts[p], memBatch{b: TopicBatch{Producer: txn, Transactional: txn.ID >= 0}, recs: slices.Clone(recs)})
	return m.end(p), nil
}

func (m *memTopic) WriteMarker(p int32, pid int64, epoch int16, commit bool, _ int32) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.parts[p] = append(m.parts[p], memBatch{b: TopicBatch{Producer: TopicProducer{pid, epoch}, Transactional: true, Control: true, Commit: commit}})
	return m.end(p), nil
}

func (m *memTopic) Sync(int32, int64) error { return nil }

func (m *memTopic) End(p int32) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.end(p)
}

func (m *memTopic) Replay(p int32, fn func(TopicBatch, []byte, []byte)) error {
	m.mu.Lock()
	bs := slices.Clone(m.parts[p])
	m.mu.Unlock()
	for _, b := range bs {
		if b.b.Control {
			fn(b.b, nil, nil)
			continue
		}
		for _, r := range b.recs {
			fn(b.b, r.Key, r.Value)
		}
	}
	return nil
}

func (m *memTopic) write(t *testing.T, out pending) {
	t.Helper()
	s := &topicStore{t: m, dirty: map[int32]int64{}}
	if _, err := s.write(out); err != nil {
		t.Fatal(err)
	}
}

// TestConsumerGroupTopicReplay: a KIP-848 group's records, written to
// the topic in Kafka's schemas as the core emits them (and as a full
// snapshot), load back into the same group.
func TestConsumerGroupTopicReplay(t *testing.T) {
	h := newCGHarness(t, map[string]int32{"t": 3, "u": 2})
	h.join("a", "t", "u")
	h.hb(ConsumerHeartbeatRequest{MemberID: "b", RebalanceTimeoutMs: 3000, SubscribedTopicNames: []string{"t"},
		Owned: []OwnedTopic{}, InstanceID: strp("inst-b"), RackID: strp("r1"), ServerAssignor: strp("range")})
	h.beat("a", 1, []OwnedTopic{{h.topc["t"], []int32{0, 1, 2}}, {h.topc["u"], []int32{0, 1}}})
	h.c.groups["g"].cg.metadataHash = 0x1234567890 // written as tagged field 0
	want := h.c.groups["g"].cg
	load := func(what string, m *memTopic) {
		t.Helper()
		c := newGroupCore(GroupConfig{}, func(p string) string { return p })
		st, err := replayInto(c, m, h.now)
		if err != nil || st.skipped > 0 {
			t.Fatalf("%s: %+v %v", what, st, err)
		}
		got := c.groups["g"].cg
		if got == nil || got.epoch != want.epoch || got.assignmentEpoch != want.assignmentEpoch ||
			!reflect.DeepEqual(got.target, want.target) || !reflect.DeepEqual(got.static, want.static) || len(got.members) != len(want.members) {
			t.Fatalf("%s: %+v\nwant %+v", what, got, want)
		}
		for id, w := range want.members {
			g := got.members[id]
			if g == nil || !sameMemberMeta(g, w) || g.epoch != w.epoch || g.prevEpoch != w.prevEpoch || g.state != w.state ||
				!g.assigned.equal(w.assigned) || !g.pending.equal(w.pending) {
				t.Fatalf("%s: member %s: %+v, want %+v", what, id, g, w)
			}
		}
	}
	// As emitted: the group log's records through the view.
	var recs []record
	scanFrames(append(groupLogHeader(), h.log...), func(r record) { recs = append(recs, r) })
	m := newMemTopic(3)
	m.write(t, newOffsetsView(3).follow(h.c, recs))
	want.metadataHash = h.c.groups["g"].cg.metadataHash
	// The emitted records carry the hash the core had then; compare the
	// snapshot's, which has it.
	m2 := newMemTopic(3)
	m2.write(t, newOffsetsView(3).reconcile(h.c, newGroupCore(GroupConfig{}, nil)))
	load("snapshot", m2)
	c := newGroupCore(GroupConfig{}, func(p string) string { return p })
	if _, err := replayInto(c, m2, h.now); err != nil || c.groups["g"].cg.metadataHash != 0x1234567890 {
		t.Fatalf("metadata hash: %v", err)
	}
	want.metadataHash = 0
	h.c.groups["g"].cg.metadataHash = 0
	load("as emitted", m)
}

// TestConsumerGroupTopicValueBytes: ConsumerGroupCurrentMemberAssignment
// (key version 8) in Kafka's schema, byte for byte.
func TestConsumerGroupTopicValueBytes(t *testing.T) {
	id := TopicID{1}
	r := record{typ: recCGCurrentMember, group: "g", cg: &cgRecord{member: "m", memberEpoch: 5, prevEpoch: 4,
		state: MemberUnrevokedPartitions, assigned: assignment{id: {0, 1}}, pending: assignment{}}}
	key := []byte{0, 8, 0, 1, 'g', 0, 1, 'm'}
	val := []byte{0, 0, 0, 0, 0, 5, 0, 0, 0, 4, 1, 2}
	val = append(val, id[:]...)
	val = append(val, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0)
	if got := cgTopicKey(&r); !bytes.Equal(got, key) {
		t.Errorf("key % x, want % x", got, key)
	}
	if got := cgTopicValue(&r); !bytes.Equal(got, val) {
		t.Errorf("value % x, want % x", got, val)
	}
	back, ok, err := decodeCGTopic(8, key, val)
	if !ok || err != nil || back.cg.memberEpoch != 5 || !back.cg.assigned.equal(r.cg.assigned) || len(back.cg.pending) != 0 {
		t.Fatalf("decoded %+v %v %v", back.cg, ok, err)
	}
}

// TestGroupsOnTopic: the coordinator on __consumer_offsets: commits, a
// deletion, a committed and an aborted transaction and a deleted group
// load back from the topic alone; the aborted transaction's offsets are
// in the topic (a transactional batch and its ABORT marker) but never
// committed.
func TestGroupsOnTopic(t *testing.T) {
	m := newMemTopic(5)
	open := func() *Groups {
		g, err := OpenGroups(GroupsOptions{Dir: t.TempDir(), OffsetsTopic: m})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	tp := func(p int32) TopicPartition { return TopicPartition{"t", p} }
	om := func(o int64) OffsetAndMetadata { return OffsetAndMetadata{Offset: o, LeaderEpoch: -1} }
	g := open()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(g.CommitOffsetsAdmin("a", map[TopicPartition]OffsetAndMetadata{tp(0): om(1), tp(1): om(2)}))
	must(g.CommitOffsetsAdmin("b", map[TopicPartition]OffsetAndMetadata{tp(0): om(3)}))
	must(g.CommitOffsetsAdmin("gone", map[TopicPartition]OffsetAndMetadata{tp(0): om(3)}))
	if _, err := g.DeleteOffsets("a", []TopicPartition{tp(1)}); err != nil {
		t.Fatal(err)
	}
	must(g.StageTxnOffsets("a", 7, 0, map[TopicPartition]OffsetAndMetadata{tp(0): om(10)}))
	must(g.StageTxnOffsets("b", 7, 0, map[TopicPartition]OffsetAndMetadata{tp(0): om(11)}))
	must(g.CompleteTxnOffsets(7, 1, 0, true))
	must(g.StageTxnOffsets("a", 8, 0, map[TopicPartition]OffsetAndMetadata{tp(2): om(20)}))
	must(g.CompleteTxnOffsets(8, 1, 0, false))
	must(g.StageTxnOffsets("b", 9, 3, map[TopicPartition]OffsetAndMetadata{tp(3): om(30)})) // left open
	if errs := g.DeleteGroups([]string{"gone"}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	g.Kill()
	g = open()
	defer g.Close()
	check := func(group string, want map[TopicPartition]OffsetAndMetadata) {
		t.Helper()
		if got := stripTimestamps(g.ListGroupOffsets(group)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", group, got, want)
		}
	}
	check("a", map[TopicPartition]OffsetAndMetadata{tp(0): om(10)})
	check("b", map[TopicPartition]OffsetAndMetadata{tp(0): om(11)})
	check("gone", nil)
	must(g.CompleteTxnOffsets(9, 4, 0, true))
	check("b", map[TopicPartition]OffsetAndMetadata{tp(0): om(11), tp(3): om(30)})
	markers := 0
	for _, p := range m.parts {
		for _, b := range p {
			if b.b.Control {
				markers++
			}
		}
	}
	if markers != 4 { // 7 in a's and b's partitions, 8 in a's, 9 in b's
		t.Errorf("%d markers, want 4", markers)
	}
}

func stripTimestamps(m map[TopicPartition]OffsetAndMetadata) map[TopicPartition]OffsetAndMetadata {
	if m == nil {
		return nil
	}
	out := map[TopicPartition]OffsetAndMetadata{}
	for tp, om := range m {
		om.CommitTimestamp = 0
		out[tp] = om
	}
	return out
}

// TestConsumerGroupTopicRegex: ConsumerGroupRegularExpression (key 16)
// round trip, and its tombstone.
func TestConsumerGroupTopicRegex(t *testing.T) {
	r := record{typ: recCGRegex, group: "g", cg: &cgRecord{regex: "orders-.*",
		resolved: &resolvedRegex{topics: []string{"orders-a", "orders-b"}, version: 7, timestamp: 1700000000000}}}
	key := cgTopicKey(&r)
	if want := []byte("\x00\x10\x00\x01g\x00\x09orders-.*"); !bytes.Equal(key, want) {
		t.Fatalf("key % x, want % x", key, want)
	}
	back, ok, err := decodeCGTopic(16, key, cgTopicValue(&r))
	if !ok || err != nil || back.cg.regex != "orders-.*" || !reflect.DeepEqual(back.cg.resolved, r.cg.resolved) {
		t.Fatalf("decoded %+v %v %v", back.cg, ok, err)
	}
	back, _, err = decodeCGTopic(16, key, nil)
	if err != nil || !back.cg.tombstone || back.cg.regex != "orders-.*" {
		t.Fatalf("tombstone %+v %v", back.cg, err)
	}
}

// TestConsumerGroupTopicClassicMember: a classic-protocol member's
// ClassicMemberMetadata goes in ConsumerGroupMemberMetadataValue's tagged
// field 0 and reads back.
func TestConsumerGroupTopicClassicMember(t *testing.T) {
	meta := &cgMemberMeta{clientID: "c", clientHost: "/h", subscribedNames: []string{"t"}, rebalanceTimeoutMs: 300,
		classic: &classicMeta{sessionTimeoutMs: 45000, protocols: []Protocol{{Name: "range", Metadata: []byte{0, 3, 1}}}}}
	r := record{typ: recCGMemberMetadata, group: "g", cg: &cgRecord{member: "m", meta: meta}}
	back, ok, err := decodeCGTopic(5, cgTopicKey(&r), cgTopicValue(&r))
	if !ok || err != nil || !back.cg.meta.classic.equal(meta.classic) || back.cg.meta.clientHost != "/h" {
		t.Fatalf("decoded %+v %v %v", back.cg.meta, ok, err)
	}
	meta.classic = nil
	back, _, err = decodeCGTopic(5, cgTopicKey(&r), cgTopicValue(&r))
	if err != nil || back.cg.meta.classic != nil {
		t.Fatalf("without classic metadata: %+v %v", back.cg.meta, err)
	}
}

// TestConsumerGroupRecordJSON: each consumer group record, written as the
// coordinator writes it, prints under the field names of Kafka's schemas
// (what dump-log --offsets-decoder shows).
func TestConsumerGroupRecordJSON(t *testing.T) {
	tid := TopicID{1, 2, 3}
	meta := &cgMemberMeta{instanceID: "i", clientID: "c", clientHost: "/h", subscribedNames: []string{"t"}, rebalanceTimeoutMs: 300,
		classic: &classicMeta{sessionTimeoutMs: 45000, protocols: []Protocol{{Name: "range", Metadata: []byte{1}}}}}
	for _, c := range []struct {
		kv        int16
		r         record
		key, data string
	}{
		{3, record{typ: recCGMetadata, group: "g", cg: &cgRecord{epoch: 4, metadataHash: 9}},
			`{"groupId":"g"}`, `{"epoch":4,"metadataHash":9}`},
		{5, record{typ: recCGMemberMetadata, group: "g", cg: &cgRecord{member: "m", meta: meta}},
			`{"groupId":"g","memberId":"m"}`, `{"instanceId":"i","rackId":null,"clientId":"c","clientHost":"/h","subscribedTopicNames":["t"],` +
				`"subscribedTopicRegex":null,"rebalanceTimeoutMs":300,"serverAssignor":null,` +
				`"classicMemberMetadata":{"sessionTimeoutMs":45000,"supportedProtocols":[{"name":"range","metadata":"AQ=="}]}}`},
		{6, record{typ: recCGTargetMetadata, group: "g", cg: &cgRecord{assignmentEpoch: 4}},
			`{"groupId":"g"}`, `{"assignmentEpoch":4}`},
		{7, record{typ: recCGTargetMember, group: "g", cg: &cgRecord{member: "m", partitions: assignment{tid: {0, 2}}}},
			`{"groupId":"g","memberId":"m"}`, `{"topicPartitions":[{"topicId":"AQIDAAAAAAAAAAAAAAAAAA","partitions":[0,2]}]}`},
		{8, record{typ: recCGCurrentMember, group: "g", cg: &cgRecord{member: "m", memberEpoch: 4, prevEpoch: 3, state: MemberUnrevokedPartitions,
			assigned: assignment{tid: {0}}, pending: assignment{tid: {2}}}},
			`{"groupId":"g","memberId":"m"}`, `{"memberEpoch":4,"previousMemberEpoch":3,"state":1,` +
				`"assignedPartitions":[{"topicId":"AQIDAAAAAAAAAAAAAAAAAA","partitions":[0]}],` +
				`"partitionsPendingRevocation":[{"topicId":"AQIDAAAAAAAAAAAAAAAAAA","partitions":[2]}]}`},
		{16, record{typ: recCGRegex, group: "g", cg: &cgRecord{regex: "o.*", resolved: &resolvedRegex{topics: []string{"orders"}, version: 7, timestamp: 8}}},
			`{"groupId":"g","regularExpression":"o.*"}`, `{"topics":["orders"],"version":7,"timestamp":8}`},
	} {
		k, v, ok, err := ConsumerGroupRecordJSON(c.kv, cgTopicKey(&c.r), cgTopicValue(&c.r))
		if !ok || err != nil {
			t.Fatalf("key %d: ok %v err %v", c.kv, ok, err)
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(v)
		if string(kb) != c.key || string(vb) != c.data {
			t.Errorf("key %d:\n%s %s\nwant\n%s %s", c.kv, kb, vb, c.key, c.data)
		}
		if _, v, _, err := ConsumerGroupRecordJSON(c.kv, cgTopicKey(&c.r), nil); err != nil || v != nil {
			t.Errorf("key %d tombstone: %v %v", c.kv, v, err)
		}
	}
	if _, _, ok, _ := ConsumerGroupRecordJSON(4, []byte{0, 4, 0, 1, 'g'}, nil); ok {
		t.Fatal("key 4 (not written) decoded")
	}
}
