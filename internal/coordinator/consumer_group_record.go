package coordinator

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Consumer group (KIP-848) records in the group log. Each is one of
// Kafka's group-coordinator records (group-coordinator/src/main/resources/
// common/message/ConsumerGroup*Key.json and *Value.json), field for
// field, so that they translate one to one into __consumer_offsets
// records: the key's fields, then a presence byte (1: a value follows; 0:
// a tombstone, Kafka's null value), then the value's fields. Encodings as
// in group_record.go (int16-length strings, nullable string -1); arrays
// are an int32 count then the elements; a uuid is 16 bytes.
//
//	7  ConsumerGroupMetadata          key: GroupId string
//	                                  value: Epoch int32, MetadataHash int64
//	8  ConsumerGroupMemberMetadata    key: GroupId string, MemberId string
//	                                  value: InstanceId nullable string, RackId nullable string,
//	                                  ClientId string, ClientHost string,
//	                                  SubscribedTopicNames [string],
//	                                  SubscribedTopicRegex nullable string,
//	                                  RebalanceTimeoutMs int32, ServerAssignor nullable string,
//	                                  then, only for a member speaking the classic protocol,
//	                                  ClassicMemberMetadata (Kafka's tagged field 0): 1 int8,
//	                                  SessionTimeoutMs int32,
//	                                  SupportedProtocols [Name string, Metadata bytes]
//	                                  (absent, as in records written before it: null)
//	9  ConsumerGroupTargetAssignmentMetadata
//	                                  key: GroupId string; value: AssignmentEpoch int32
//	10 ConsumerGroupTargetAssignmentMember
//	                                  key: GroupId string, MemberId string
//	                                  value: TopicPartitions [TopicId uuid, Partitions [int32]]
//	11 ConsumerGroupCurrentMemberAssignment
//	                                  key: GroupId string, MemberId string
//	                                  value: MemberEpoch int32, PreviousMemberEpoch int32,
//	                                  State int8 (MemberState),
//	                                  AssignedPartitions [TopicId uuid, Partitions [int32]],
//	                                  PartitionsPendingRevocation [TopicId uuid, Partitions [int32]]
//	12 ConsumerGroupRegularExpression key: GroupId string, RegularExpression string
//	                                  value: Topics [string], Version int64, Timestamp int64
//	                                  (Kafka's key type 16)
//
// Not written: ConsumerGroupPartitionMetadata (deprecated by Kafka 4.1's
// MetadataHash).
const (
	recCGMetadata       recordType = 7
	recCGMemberMetadata recordType = 8
	recCGTargetMetadata recordType = 9
	recCGTargetMember   recordType = 10
	recCGCurrentMember  recordType = 11
	recCGRegex          recordType = 12
)

// cgRecord is the key beyond the group id and the value of a consumer
// group record; tombstone: Kafka's null value.
type cgRecord struct {
	member    string
	tombstone bool

	epoch           int32 // ConsumerGroupMetadata.Epoch
	metadataHash    int64
	assignmentEpoch int32 // ConsumerGroupTargetAssignmentMetadata

	meta *cgMemberMeta // ConsumerGroupMemberMetadata

	partitions assignment // ConsumerGroupTargetAssignmentMember

	// ConsumerGroupCurrentMemberAssignment.
	memberEpoch, prevEpoch int32
	state                  MemberState
	assigned, pending      assignment

	// ConsumerGroupRegularExpression: the key's regex, the value.
	regex    string
	resolved *resolvedRegex
}

type cgMemberMeta struct {
	instanceID, rackID, regex, serverAssignor string // "" for null
	clientID, clientHost                      string
	subscribedNames                           []string
	rebalanceTimeoutMs                        int32
	classic                                   *classicMeta
}

// classicMeta is ConsumerGroupMemberMetadataValue.ClassicMemberMetadata:
// the session timeout and the JoinGroup protocols of a member that speaks
// the classic protocol.
type classicMeta struct {
	sessionTimeoutMs int32
	protocols        []Protocol
}

func (a *classicMeta) equal(b *classicMeta) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.sessionTimeoutMs == b.sessionTimeoutMs && sameProtocols(a.protocols, b.protocols)
}

func isCGRecord(t recordType) bool { return t >= recCGMetadata && t <= recCGRegex }

func hasMemberKey(t recordType) bool {
	return t == recCGMemberMetadata || t == recCGTargetMember || t == recCGCurrentMember
}

func appendNullString(dst []byte, s string) []byte {
	if s == "" {
		return kbin.AppendNullableString(dst, nil)
	}
	return kbin.AppendNullableString(dst, &s)
}

func readNullString(r *kbin.Reader) string {
	if s := r.NullableString(); s != nil {
		return *s
	}
	return ""
}

func appendAssignment(dst []byte, a assignment) []byte {
	ids := a.topics()
	dst = kbin.AppendArrayLen(dst, len(ids))
	for _, id := range ids {
		dst = kbin.AppendUuid(dst, id)
		dst = kbin.AppendArrayLen(dst, len(a[id]))
		for _, p := range a[id] {
			dst = kbin.AppendInt32(dst, p)
		}
	}
	return dst
}

// readCount reads an array length no longer than what is left (each
// element at least min bytes).
func readCount(r *kbin.Reader, min int) (int, error) {
	return checkCount(r.ArrayLen(), min, r)
}

// readCompactCount is readCount for a compact array (Kafka's flexible
// versions).
func readCompactCount(r *kbin.Reader, min int) (int, error) {
	return checkCount(r.CompactArrayLen(), min, r)
}

func checkCount(n int32, min int, r *kbin.Reader) (int, error) {
	if n < 0 || int(n)*min > len(r.Src) {
		return 0, fmt.Errorf("%w: array length %d", ErrGroupLogCorrupt, n)
	}
	return int(n), nil
}

// readAssignment reads [TopicId uuid, Partitions [int32]] as the group
// log writes it (appendAssignment).
func readAssignment(r *kbin.Reader) (assignment, error) { return readAssignmentOf(r, false) }

// readAssignmentOf reads an assignment in the group log's layout or, when
// flexible, in Kafka's __consumer_offsets schema (appendTopicAssignment:
// compact arrays, a tagged-field section after each topic).
func readAssignmentOf(r *kbin.Reader, flexible bool) (assignment, error) {
	count, min := readCount, 20 // uuid, int32 count
	if flexible {
		count, min = readCompactCount, 18 // uuid, uvarint count, tags
	}
	n, err := count(r, min)
	if err != nil {
		return nil, err
	}
	a := assignment{}
	for i := 0; i < n && r.Ok(); i++ {
		id := r.Uuid()
		k, err := count(r, 4)
		if err != nil {
			return nil, err
		}
		for j := 0; j < k && r.Ok(); j++ {
			a[id] = append(a[id], r.Int32())
		}
		if flexible {
			readTags(r, nil)
		}
	}
	return a.normalize(), nil
}

func appendCGPayload(dst []byte, r *record) []byte {
	c := r.cg
	dst = kbin.AppendString(dst, r.group)
	if hasMemberKey(r.typ) {
		dst = kbin.AppendString(dst, c.member)
	}
	if r.typ == recCGRegex {
		dst = kbin.AppendString(dst, c.regex)
	}
	if c.tombstone {
		return kbin.AppendInt8(dst, 0)
	}
	dst = kbin.AppendInt8(dst, 1)
	switch r.typ {
	case recCGMetadata:
		dst = kbin.AppendInt32(dst, c.epoch)
		dst = kbin.AppendInt64(dst, c.metadataHash)
	case recCGMemberMetadata:
		m := c.meta
		dst = appendNullString(dst, m.instanceID)
		dst = appendNullString(dst, m.rackID)
		dst = kbin.AppendString(dst, m.clientID)
		dst = kbin.AppendString(dst, m.clientHost)
		dst = kbin.AppendArrayLen(dst, len(m.subscribedNames))
		for _, n := range m.subscribedNames {
			dst = kbin.AppendString(dst, n)
		}
		dst = appendNullString(dst, m.regex)
		dst = kbin.AppendInt32(dst, m.rebalanceTimeoutMs)
		dst = appendNullString(dst, m.serverAssignor)
		if cm := m.classic; cm != nil {
			dst = kbin.AppendInt8(dst, 1)
			dst = kbin.AppendInt32(dst, cm.sessionTimeoutMs)
			dst = kbin.AppendArrayLen(dst, len(cm.protocols))
			for _, p := range cm.protocols {
				dst = kbin.AppendString(dst, p.Name)
				dst = kbin.AppendBytes(dst, p.Metadata)
			}
		}
	case recCGTargetMetadata:
		dst = kbin.AppendInt32(dst, c.assignmentEpoch)
	case recCGTargetMember:
		dst = appendAssignment(dst, c.partitions)
	case recCGRegex:
		dst = kbin.AppendArrayLen(dst, len(c.resolved.topics))
		for _, n := range c.resolved.topics {
			dst = kbin.AppendString(dst, n)
		}
		dst = kbin.AppendInt64(dst, c.resolved.version)
		dst = kbin.AppendInt64(dst, c.resolved.timestamp)
	case recCGCurrentMember:
		dst = kbin.AppendInt32(dst, c.memberEpoch)
		dst = kbin.AppendInt32(dst, c.prevEpoch)
		dst = kbin.AppendInt8(dst, int8(c.state))
		dst = appendAssignment(dst, c.assigned)
		dst = appendAssignment(dst, c.pending)
	}
	return dst
}

func decodeCGPayload(rec *record, r *kbin.Reader) error {
	c := &cgRecord{}
	rec.cg = c
	rec.group = r.String()
	if hasMemberKey(rec.typ) {
		c.member = r.String()
	}
	if rec.typ == recCGRegex {
		c.regex = r.String()
	}
	switch r.Int8() {
	case 0:
		c.tombstone = true
		return nil
	case 1:
	default:
		return fmt.Errorf("%w: bad value presence byte", ErrGroupLogCorrupt)
	}
	var err error
	switch rec.typ {
	case recCGMetadata:
		c.epoch, c.metadataHash = r.Int32(), r.Int64()
	case recCGMemberMetadata:
		m := &cgMemberMeta{instanceID: readNullString(r), rackID: readNullString(r), clientID: r.String(), clientHost: r.String()}
		n, err := readCount(r, 2)
		if err != nil {
			return err
		}
		for i := 0; i < n && r.Ok(); i++ {
			m.subscribedNames = append(m.subscribedNames, r.String())
		}
		m.regex, m.rebalanceTimeoutMs, m.serverAssignor = readNullString(r), r.Int32(), readNullString(r)
		if r.Ok() && len(r.Src) > 0 { // ClassicMemberMetadata
			if r.Int8() != 1 {
				return fmt.Errorf("%w: bad ClassicMemberMetadata presence byte", ErrGroupLogCorrupt)
			}
			cm := &classicMeta{sessionTimeoutMs: r.Int32()}
			k, err := readCount(r, 6)
			if err != nil {
				return err
			}
			for i := 0; i < k && r.Ok(); i++ {
				cm.protocols = append(cm.protocols, Protocol{Name: r.String(), Metadata: cloneBytes(r.Bytes())})
			}
			m.classic = cm
		}
		c.meta = m
	case recCGTargetMetadata:
		c.assignmentEpoch = r.Int32()
	case recCGRegex:
		n, err := readCount(r, 2)
		if err != nil {
			return err
		}
		x := &resolvedRegex{topics: []string{}}
		for i := 0; i < n && r.Ok(); i++ {
			x.topics = append(x.topics, r.String())
		}
		x.version, x.timestamp = r.Int64(), r.Int64()
		c.resolved = x
	case recCGTargetMember:
		c.partitions, err = readAssignment(r)
	case recCGCurrentMember:
		c.memberEpoch, c.prevEpoch, c.state = r.Int32(), r.Int32(), MemberState(r.Int8())
		if c.assigned, err = readAssignment(r); err == nil {
			c.pending, err = readAssignment(r)
		}
	}
	return err
}

// cgMemberRecords are the three records that hold m (its metadata, its
// target assignment, its current assignment), in the order Kafka writes a
// new member's.
func cgMemberRecords(group string, m *cgMember, target assignment) []record {
	return []record{
		{typ: recCGMemberMetadata, group: group, cg: &cgRecord{member: m.id, meta: memberMeta(m)}},
		{typ: recCGTargetMember, group: group, cg: &cgRecord{member: m.id, partitions: target}},
		currentAssignmentRecord(group, m),
	}
}

func memberMeta(m *cgMember) *cgMemberMeta {
	return &cgMemberMeta{
		instanceID: m.instanceID, rackID: m.rackID, regex: m.regex, serverAssignor: m.serverAssignor,
		clientID: m.clientID, clientHost: m.clientHost, subscribedNames: m.subscribedNames,
		rebalanceTimeoutMs: m.rebalanceTimeoutMs, classic: m.classic,
	}
}

func currentAssignmentRecord(group string, m *cgMember) record {
	return record{typ: recCGCurrentMember, group: group, cg: &cgRecord{
		member: m.id, memberEpoch: m.epoch, prevEpoch: m.prevEpoch, state: m.state,
		assigned: m.assigned, pending: m.pending,
	}}
}

// applyCG applies one consumer group record to the core's state (live,
// through emit, and when the group log is replayed).
func (c *groupCore) applyCG(r record) {
	x := r.cg
	g := c.getOrCreate(r.group)
	if r.typ == recCGMetadata && x.tombstone {
		g.cg = nil
		return
	}
	if g.cg == nil {
		if x.tombstone {
			return
		}
		g.cg = newConsumerGroup()
	}
	cg := g.cg
	switch r.typ {
	case recCGRegex:
		if x.tombstone {
			delete(cg.regexes, x.regex)
		} else {
			cp := *x.resolved
			cp.topics = append([]string{}, cp.topics...)
			sort.Strings(cp.topics)
			cg.regexes[x.regex] = &cp
		}
	case recCGMetadata:
		cg.epoch, cg.metadataHash = x.epoch, x.metadataHash
	case recCGTargetMetadata:
		if !x.tombstone {
			cg.assignmentEpoch = x.assignmentEpoch
		}
	case recCGTargetMember:
		if x.tombstone {
			delete(cg.target, x.member)
		} else {
			cg.target[x.member] = x.partitions.clone()
		}
	case recCGMemberMetadata:
		m := cg.members[x.member]
		if x.tombstone {
			if m != nil {
				cg.clearPartitionEpochs(m.assigned)
				cg.clearPartitionEpochs(m.pending)
				if m.instanceID != "" && cg.static[m.instanceID] == m.id {
					delete(cg.static, m.instanceID)
				}
				delete(cg.members, x.member)
			}
			return
		}
		if m == nil {
			m = &cgMember{id: x.member, assigned: assignment{}, pending: assignment{}}
			if c.replaying {
				m.sessionDeadline = c.replayNow.Add(c.cfg.ConsumerSessionTimeout)
			}
			cg.members[x.member] = m
		}
		if m.instanceID != "" && cg.static[m.instanceID] == m.id {
			delete(cg.static, m.instanceID)
		}
		mm := x.meta
		m.instanceID, m.rackID, m.regex, m.serverAssignor = mm.instanceID, mm.rackID, mm.regex, mm.serverAssignor
		m.clientID, m.clientHost, m.rebalanceTimeoutMs = mm.clientID, mm.clientHost, mm.rebalanceTimeoutMs
		m.subscribedNames = append([]string(nil), mm.subscribedNames...)
		sort.Strings(m.subscribedNames)
		m.classic = mm.classic
		if c.replaying && m.classic != nil {
			m.sessionDeadline = c.replayNow.Add(time.Duration(m.classic.sessionTimeoutMs) * time.Millisecond)
		}
		if m.instanceID != "" {
			cg.static[m.instanceID] = m.id
		}
	case recCGCurrentMember:
		m := cg.members[x.member]
		if m == nil {
			if x.tombstone {
				return
			}
			// Kafka writes the member's metadata first; a current
			// assignment alone still makes a member.
			m = &cgMember{id: x.member}
			cg.members[x.member] = m
		}
		cg.clearPartitionEpochs(m.assigned)
		cg.clearPartitionEpochs(m.pending)
		if x.tombstone {
			m.epoch, m.prevEpoch, m.state, m.assigned, m.pending = 0, 0, MemberStable, assignment{}, assignment{}
			return
		}
		m.epoch, m.prevEpoch, m.state = x.memberEpoch, x.prevEpoch, x.state
		m.assigned, m.pending = x.assigned.clone(), x.pending.clone()
		cg.setPartitionEpochs(m.assigned, m.epoch)
		cg.setPartitionEpochs(m.pending, m.epoch)
	}
}

// snapshotCG is g's consumer group state as records that replay to it.
func snapshotCG(id string, cg *consumerGroup) []record {
	out := []record{
		{typ: recCGMetadata, group: id, cg: &cgRecord{epoch: cg.epoch, metadataHash: cg.metadataHash}},
		{typ: recCGTargetMetadata, group: id, cg: &cgRecord{assignmentEpoch: cg.assignmentEpoch}},
	}
	for _, re := range sortedKeys(cg.regexes) {
		out = append(out, record{typ: recCGRegex, group: id, cg: &cgRecord{regex: re, resolved: cg.regexes[re]}})
	}
	for _, m := range cg.sortedMembers() {
		out = append(out, cgMemberRecords(id, m, cg.target[m.id])...)
	}
	// Target assignments of ids that are not members (none normally).
	var orphans []string
	for mid := range cg.target {
		if cg.members[mid] == nil {
			orphans = append(orphans, mid)
		}
	}
	sort.Strings(orphans)
	for _, mid := range orphans {
		out = append(out, record{typ: recCGTargetMember, group: id, cg: &cgRecord{member: mid, partitions: cg.target[mid]}})
	}
	return out
}

// formatCGRecord is a consumer group record as dump-log shows it, with
// Kafka's record and field names.
func formatCGRecord(r record) string {
	x := r.cg
	key := fmt.Sprintf("group=%q", r.group)
	if hasMemberKey(r.typ) {
		key += fmt.Sprintf(" member=%q", x.member)
	}
	if r.typ == recCGRegex {
		key += fmt.Sprintf(" regularExpression=%q", x.regex)
	}
	name := map[recordType]string{recCGMetadata: "ConsumerGroupMetadata", recCGMemberMetadata: "ConsumerGroupMemberMetadata",
		recCGTargetMetadata: "ConsumerGroupTargetAssignmentMetadata", recCGTargetMember: "ConsumerGroupTargetAssignmentMember",
		recCGCurrentMember: "ConsumerGroupCurrentMemberAssignment", recCGRegex: "ConsumerGroupRegularExpression"}[r.typ]
	if x.tombstone {
		return fmt.Sprintf("%s %s tombstone", name, key)
	}
	parts := func(a assignment) string {
		var out []string
		for _, t := range a.topics() {
			out = append(out, fmt.Sprintf("%x:%v", t, a[t]))
		}
		return "[" + strings.Join(out, " ") + "]"
	}
	switch r.typ {
	case recCGMetadata:
		return fmt.Sprintf("%s %s epoch=%d metadataHash=%d", name, key, x.epoch, x.metadataHash)
	case recCGMemberMetadata:
		m := x.meta
		s := fmt.Sprintf("%s %s instanceId=%q rackId=%q clientId=%q clientHost=%q subscribedTopicNames=%v subscribedTopicRegex=%q rebalanceTimeoutMs=%d serverAssignor=%q",
			name, key, m.instanceID, m.rackID, m.clientID, m.clientHost, m.subscribedNames, m.regex, m.rebalanceTimeoutMs, m.serverAssignor)
		if cm := m.classic; cm != nil {
			var names []string
			for _, p := range cm.protocols {
				names = append(names, p.Name)
			}
			s += fmt.Sprintf(" classicMemberMetadata={sessionTimeoutMs=%d supportedProtocols=%v}", cm.sessionTimeoutMs, names)
		}
		return s
	case recCGTargetMetadata:
		return fmt.Sprintf("%s %s assignmentEpoch=%d", name, key, x.assignmentEpoch)
	case recCGTargetMember:
		return fmt.Sprintf("%s %s topicPartitions=%s", name, key, parts(x.partitions))
	case recCGRegex:
		return fmt.Sprintf("%s %s topics=%v version=%d timestamp=%d", name, key, x.resolved.topics, x.resolved.version, x.resolved.timestamp)
	default:
		return fmt.Sprintf("%s %s memberEpoch=%d previousMemberEpoch=%d state=%s assignedPartitions=%s partitionsPendingRevocation=%s",
			name, key, x.memberEpoch, x.prevEpoch, x.state, parts(x.assigned), parts(x.pending))
	}
}

// refreshRegexes resolves every regex a member subscribes with against im
// and writes a ConsumerGroupRegularExpression record for each whose
// topics changed (or that had none); regexes no member uses any more are
// tombstoned. Called when the subscriptions or the topic image changed
// (refreshMetadata), as Kafka refreshes its resolved regexes.
func (c *groupCore) refreshRegexes(now time.Time, id string, cg *consumerGroup, im *TopicImage) {
	used := map[string]bool{}
	for _, m := range cg.members {
		if m.regex != "" {
			used[m.regex] = true
		}
	}
	for _, re := range sortedKeys(used) {
		topics := resolveRegex(re, im)
		if cur := cg.regexes[re]; cur != nil && slices.Equal(cur.topics, topics) {
			continue
		}
		c.emit(record{typ: recCGRegex, group: id, cg: &cgRecord{regex: re,
			resolved: &resolvedRegex{topics: topics, version: int64(im.Gen), timestamp: now.UnixMilli()}}})
	}
	c.dropRegexes(id, cg, func(re string) bool { return !used[re] })
}

// dropUnusedRegexes tombstones the resolutions no member uses any more
// (a member left).
func (c *groupCore) dropUnusedRegexes(id string, cg *consumerGroup) {
	used := map[string]bool{}
	for _, m := range cg.members {
		used[m.regex] = true
	}
	c.dropRegexes(id, cg, func(re string) bool { return !used[re] })
}

// dropRegexes tombstones the resolutions drop selects.
func (c *groupCore) dropRegexes(id string, cg *consumerGroup, drop func(string) bool) {
	for _, re := range sortedKeys(cg.regexes) {
		if drop(re) {
			c.emit(record{typ: recCGRegex, group: id, cg: &cgRecord{regex: re, tombstone: true}})
		}
	}
}
