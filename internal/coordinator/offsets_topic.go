package coordinator

// __consumer_offsets in Kafka's record schemas (issue 38 item 1, first
// part).
//
// The group coordinator writes every committed offset and every group's
// membership to the broker's __consumer_offsets topic as Kafka's group
// coordinator does, so that the tools that read that topic (Burrow,
// kminion's offsetsTopic mode, a consumer decoding it with kmsg) see the
// groups:
//
//   - key OffsetCommitKey version 1 (group, topic, partition), value
//     OffsetCommitValue version 3 (offset, leader epoch, metadata, commit
//     timestamp), as Kafka 3.x writes them; an offset deleted or expired
//     is a tombstone (the key, no value);
//   - key GroupMetadataKey version 2 (group), value GroupMetadataValue
//     version 3 (protocol type, generation, protocol, leader, state
//     timestamp, members with their subscription and assignment); a group
//     deleted is a tombstone, and so are its offsets;
//   - the partition of group g is Kafka's partitionFor:
//     abs(g.hashCode) % partitions, with Java's String.hashCode.
//
// Deviations, for now: the group log (group-log, group_store.go) stays
// the coordinator's store of record, loaded at start-up; the topic
// follows it. Each core call's records are appended to the topic under
// the coordinator's lock, in the order the group log has them, without
// waiting for the topic's fsync (the group log's fsync makes the answer
// durable). At start-up the topic is read back and brought to the group
// log's state (reconcile): what a crash lost from the topic's tail, or
// what a data dir written before the topic existed never had, is
// appended then. Transactional offsets are written when their
// transaction commits, as plain commits: Kafka writes them at
// TxnOffsetCommit inside the producer's transaction, with the COMMIT or
// ABORT marker in the partition.

import (
	"fmt"
	"sort"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// OffsetsTopic is the broker's __consumer_offsets as the group
// coordinator writes it.
type OffsetsTopic interface {
	// Partitions is the topic's partition count.
	Partitions() int32
	// Append appends recs to partition p as one batch, in order. It does
	// not wait for an fsync.
	Append(p int32, recs []TopicRecord) error
	// Replay calls fn with each record of partition p, from its start.
	Replay(p int32, fn func(key, value []byte)) error
}

// TopicRecord is one record of an internal topic; a nil Value is a
// tombstone.
type TopicRecord struct{ Key, Value []byte }

// javaStringHash is Java's String.hashCode: s as UTF-16 code units,
// h = 31*h + unit, in int32 arithmetic.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// PartitionFor is Kafka's partitionFor(groupId): Utils.abs(hashCode) %
// partitions, Utils.abs mapping MinInt32 to 0.
func PartitionFor(id string, partitions int32) int32 {
	h := javaStringHash(id)
	switch {
	case h == -1<<31:
		h = 0
	case h < 0:
		h = -h
	}
	return h % partitions
}

// Keys and values of the records, in Kafka's schemas.

func offsetKey(group string, tp TopicPartition) []byte {
	k := kmsg.OffsetCommitKey{Version: 1, Group: group, Topic: tp.Topic, Partition: tp.Partition}
	return k.AppendTo(nil)
}

func offsetValue(om OffsetAndMetadata) []byte {
	v := kmsg.OffsetCommitValue{Version: 3, Offset: om.Offset, LeaderEpoch: om.LeaderEpoch, Metadata: om.Metadata,
		CommitTimestamp: om.CommitTimestamp}
	return v.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: 2, Group: group}
	return k.AppendTo(nil)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func groupValue(m *groupMetadata) []byte {
	v := kmsg.GroupMetadataValue{Version: 3, ProtocolType: m.protocolType, Generation: m.generation,
		Protocol: nullable(m.protocol), Leader: nullable(m.leader), CurrentStateTimestamp: m.stateSince}
	for _, mm := range m.members {
		v.Members = append(v.Members, kmsg.GroupMetadataValueMember{
			MemberID: mm.id, InstanceID: nullable(mm.instanceID), ClientID: mm.clientID, ClientHost: mm.clientHost,
			RebalanceTimeoutMillis: mm.rebalanceTimeoutMs, SessionTimeoutMillis: mm.sessionTimeoutMs,
			Subscription: mm.subscription, Assignment: mm.assignment,
		})
	}
	return v.AppendTo(nil)
}

// offsetsView is what the topic holds, as the coordinator last wrote (or
// read back) it: per group, the encoded metadata value and the offsets.
type offsetsView struct {
	topic  OffsetsTopic
	n      int32
	groups map[string]*viewGroup
	// txnGroups: the groups each producer has staged offsets in, diffed
	// when its transaction completes.
	txnGroups map[int64]map[string]bool
}

type viewGroup struct {
	meta    string // the encoded GroupMetadataValue, "" when none
	offsets map[TopicPartition]OffsetAndMetadata
}

func newOffsetsView(t OffsetsTopic) *offsetsView {
	return &offsetsView{topic: t, n: t.Partitions(), groups: map[string]*viewGroup{}, txnGroups: map[int64]map[string]bool{}}
}

// load reads the topic back into the view. Records it does not know
// (another key version, a value that does not decode) are skipped.
func (v *offsetsView) load() (records int, err error) {
	for p := range v.n {
		err := v.topic.Replay(p, func(key, value []byte) {
			records++
			if len(key) < 2 {
				return
			}
			switch version := int16(key[0])<<8 | int16(key[1]); version {
			case 0, 1:
				var k kmsg.OffsetCommitKey
				if k.ReadFrom(key) != nil {
					return
				}
				tp := TopicPartition{k.Topic, k.Partition}
				if value == nil {
					if g := v.groups[k.Group]; g != nil {
						delete(g.offsets, tp)
					}
					return
				}
				var val kmsg.OffsetCommitValue
				if val.ReadFrom(value) != nil {
					return
				}
				le := int32(-1)
				if val.Version >= 3 {
					le = val.LeaderEpoch
				}
				v.group(k.Group).offsets[tp] = OffsetAndMetadata{Offset: val.Offset, LeaderEpoch: le,
					Metadata: val.Metadata, CommitTimestamp: val.CommitTimestamp}
			case 2:
				var k kmsg.GroupMetadataKey
				if k.ReadFrom(key) != nil {
					return
				}
				v.group(k.Group).meta = string(value)
			}
		})
		if err != nil {
			return records, err
		}
	}
	return records, nil
}

func (v *offsetsView) group(id string) *viewGroup {
	g := v.groups[id]
	if g == nil {
		g = &viewGroup{offsets: map[TopicPartition]OffsetAndMetadata{}}
		v.groups[id] = g
	}
	return g
}

// pending collects the records to append, per partition, in order.
type pending map[int32][]TopicRecord

func (v *offsetsView) add(out pending, group string, r TopicRecord) {
	p := PartitionFor(group, v.n)
	out[p] = append(out[p], r)
}

// setOffset writes group's offset for tp as the core has it now (absent:
// a tombstone), if the view differs.
func (v *offsetsView) setOffset(out pending, c *groupCore, group string, tp TopicPartition) {
	var want *OffsetAndMetadata
	if g := c.groups[group]; g != nil {
		if e := g.offsets[tp]; e != nil {
			want = &e.OffsetAndMetadata
		}
	}
	vg := v.groups[group]
	var have *OffsetAndMetadata
	if vg != nil {
		if om, ok := vg.offsets[tp]; ok {
			have = &om
		}
	}
	switch {
	case want == nil && have == nil:
	case want == nil:
		delete(vg.offsets, tp)
		v.add(out, group, TopicRecord{Key: offsetKey(group, tp)})
	case have == nil || *have != *want:
		v.group(group).offsets[tp] = *want
		v.add(out, group, TopicRecord{Key: offsetKey(group, tp), Value: offsetValue(*want)})
	}
}

// setMeta writes group's metadata as the core has it now.
func (v *offsetsView) setMeta(out pending, c *groupCore, group string) {
	want := ""
	if g := c.groups[group]; g != nil && g.lastMeta != nil {
		want = string(groupValue(g.lastMeta))
	}
	vg := v.groups[group]
	have := ""
	if vg != nil {
		have = vg.meta
	}
	switch {
	case want == have:
	case want == "":
		vg.meta = ""
		v.add(out, group, TopicRecord{Key: groupKey(group)})
	default:
		v.group(group).meta = want
		v.add(out, group, TopicRecord{Key: groupKey(group), Value: []byte(want)})
	}
}

// diffGroup writes everything of group that differs from the core.
func (v *offsetsView) diffGroup(out pending, c *groupCore, group string) {
	tps := map[TopicPartition]bool{}
	if g := c.groups[group]; g != nil {
		for tp := range g.offsets {
			tps[tp] = true
		}
	}
	if vg := v.groups[group]; vg != nil {
		for tp := range vg.offsets {
			tps[tp] = true
		}
	}
	for _, tp := range sortedTPs(tps) {
		v.setOffset(out, c, group, tp)
	}
	v.setMeta(out, c, group)
	if vg := v.groups[group]; vg != nil && vg.meta == "" && len(vg.offsets) == 0 {
		delete(v.groups, group)
	}
}

// follow turns one core call's records into the topic's records.
func (v *offsetsView) follow(c *groupCore, recs []record) pending {
	if len(recs) == 0 {
		return nil
	}
	out := pending{}
	for _, r := range recs {
		switch r.typ {
		case recOffsetCommit, recOffsetDelete:
			v.setOffset(out, c, r.group, r.tp)
		case recGroupMetadata:
			v.setMeta(out, c, r.group)
		case recGroupDelete:
			v.diffGroup(out, c, r.group)
		case recTxnStage:
			gs := v.txnGroups[r.producerID]
			if gs == nil {
				gs = map[string]bool{}
				v.txnGroups[r.producerID] = gs
			}
			gs[r.group] = true
		case recTxnComplete:
			for _, id := range sortedKeys(v.txnGroups[r.producerID]) {
				v.diffGroup(out, c, id)
			}
			delete(v.txnGroups, r.producerID)
		}
	}
	return out
}

// reconcile brings the view (the topic as read back) to the core's state,
// and notes the producers with staged offsets.
func (v *offsetsView) reconcile(c *groupCore) pending {
	out := pending{}
	ids := map[string]bool{}
	for id, g := range c.groups {
		ids[id] = true
		for pid := range g.pendingTxn {
			gs := v.txnGroups[pid]
			if gs == nil {
				gs = map[string]bool{}
				v.txnGroups[pid] = gs
			}
			gs[id] = true
		}
	}
	for id := range v.groups {
		ids[id] = true
	}
	for _, id := range sortedKeys(ids) {
		v.diffGroup(out, c, id)
	}
	return out
}

// write appends out, one batch per partition, in partition order.
func (v *offsetsView) write(out pending) error {
	ps := make([]int32, 0, len(out))
	for p := range out {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	var first error
	for _, p := range ps {
		if err := v.topic.Append(p, out[p]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// openView reads __consumer_offsets back and appends what it lacks of the
// state the group log loaded (reconcile); called by OpenGroups.
func (g *Groups) openView(t OffsetsTopic) error {
	start := time.Now()
	v := newOffsetsView(t)
	read, err := v.load()
	if err != nil {
		return fmt.Errorf("reading __consumer_offsets: %w", err)
	}
	out := v.reconcile(g.core)
	wrote := 0
	for _, rs := range out {
		wrote += len(rs)
	}
	if err := v.write(out); err != nil {
		return fmt.Errorf("writing __consumer_offsets: %w", err)
	}
	g.view = v
	g.logger.Info("__consumer_offsets follows the group log", zap.Int("read", read), zap.Int("appended", wrote),
		zap.Duration("took", time.Since(start)))
	return nil
}
