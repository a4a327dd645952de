package coordinator

import (
	"fmt"
	"sort"
	"time"
)

// CommitRequest is an OffsetCommit in the coordinator's terms. A simple
// commit (no group management) has Generation -1 and no member id.
type CommitRequest struct {
	Group, MemberID, InstanceID string
	Generation                  int32 // the member epoch for a consumer group
	Offsets                     map[TopicPartition]OffsetAndMetadata
	// Version is the OffsetCommit version: a consumer group's member
	// must commit with v9+.
	Version int16
}

// CommitOffsets validates and applies an OffsetCommit. A non-nil top error
// applies to every partition; otherwise partErrs holds the partitions that
// failed (metadata too large).
func (c *groupCore) CommitOffsets(now time.Time, req CommitRequest) (partErrs map[TopicPartition]error, top error) {
	if req.Group == "" || len(req.Group) > maxNameLen {
		return nil, ErrInvalidGroupID
	}
	g := c.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			// The broker answers ILLEGAL_GENERATION before v9, as Kafka.
			return nil, ErrGroupIDNotFound
		}
	} else if err := c.validateCommit(now, g, req); err != nil {
		return nil, err
	}
	partErrs = map[TopicPartition]error{}
	for _, tp := range sortedTPs(req.Offsets) {
		om := req.Offsets[tp]
		if len(tp.Topic) > maxNameLen {
			partErrs[tp] = ErrInvalidRequest
			continue
		}
		if len(om.Metadata) > c.cfg.MaxMetadataSize {
			partErrs[tp] = ErrOffsetMetadataTooLarge
			continue
		}
		om.CommitTimestamp = now.UnixMilli()
		c.emit(record{typ: recOffsetCommit, group: req.Group, tp: tp, offset: om})
	}
	return partErrs, nil
}

// validateCommit is Kafka's validateOffsetCommit for classic groups.
func (c *groupCore) validateCommit(now time.Time, g *group, req CommitRequest) error {
	if g.cg != nil {
		return validateConsumerCommit(g.cg, req.MemberID, req.Generation, req.Version, false)
	}
	if req.Generation < 0 && g.state == StateEmpty {
		return nil
	}
	if req.Generation < 0 && req.MemberID == "" && req.InstanceID == "" {
		// No member id and no generation (v0): only for an Empty group.
		return ErrUnknownMemberID
	}
	m, err := g.validateMember(req.MemberID, req.InstanceID)
	switch {
	case err != nil:
		return err
	case req.Generation != g.generation:
		return ErrIllegalGeneration
	}
	switch g.state {
	case StateStable, StatePreparingRebalance:
		m.lastHeartbeat = now
		return nil
	case StateCompletingRebalance:
		return ErrRebalanceInProgress
	}
	return ErrUnknownMemberID
}

// FetchedOffset is one partition's answer to an OffsetFetch.
type FetchedOffset struct {
	TopicPartition
	OffsetAndMetadata // Offset -1 when none is committed
	Err               error
}

// FetchOffsets answers an OffsetFetch for group: tps, or every committed
// partition when tps is nil. requireStable answers ErrUnstableOffsetCommit
// for partitions with staged transactional offsets.
func (c *groupCore) FetchOffsets(groupID string, tps []TopicPartition, requireStable bool) []FetchedOffset {
	g := c.groups[groupID]
	if tps == nil {
		if g == nil {
			return nil
		}
		tps = sortedTPs(g.offsets)
	}
	out := make([]FetchedOffset, 0, len(tps))
	for _, tp := range tps {
		f := FetchedOffset{TopicPartition: tp, OffsetAndMetadata: OffsetAndMetadata{Offset: -1, LeaderEpoch: -1}}
		if g != nil {
			if requireStable && g.hasPendingTxn(tp) {
				f.Err = ErrUnstableOffsetCommit
			} else if e := g.offsets[tp]; e != nil {
				f.OffsetAndMetadata = e.OffsetAndMetadata
			}
		}
		out = append(out, f)
	}
	return out
}

// DeleteGroups deletes Empty groups with their offsets.
func (c *groupCore) DeleteGroups(now time.Time, ids []string) []error {
	errs := make([]error, len(ids))
	for i, id := range ids {
		g := c.groups[id]
		switch {
		case id == "":
			errs[i] = ErrInvalidGroupID
		case g == nil || g.state == StateDead:
			errs[i] = ErrGroupIDNotFound
		case g.cg != nil && len(g.cg.members) > 0:
			errs[i] = ErrNonEmptyGroup
		case g.cg == nil && g.state != StateEmpty:
			errs[i] = ErrNonEmptyGroup
		default:
			c.emit(record{typ: recGroupDelete, group: id})
		}
	}
	return errs
}

// DeleteOffsets is OffsetDelete: an Empty group loses the offsets; a group
// with consumer-protocol members keeps those of topics they subscribe to.
func (c *groupCore) DeleteOffsets(now time.Time, groupID string, tps []TopicPartition) (map[TopicPartition]error, error) {
	g := c.groups[groupID]
	if groupID == "" {
		return nil, ErrInvalidGroupID
	}
	if g == nil || g.state == StateDead {
		return nil, ErrGroupIDNotFound
	}
	var subscribed map[string]bool
	if g.cg != nil {
		// Kafka: a consumer group keeps the offsets of the topics its
		// members subscribe to, whatever its state.
		subscribed = c.consumerSubscribedTopics(g)
	} else if g.state != StateEmpty {
		if g.protocolType != "consumer" {
			return nil, ErrNonEmptyGroup
		}
		subscribed = subscribedTopics(g)
	}
	errs := map[TopicPartition]error{}
	for _, tp := range tps {
		if subscribed[tp.Topic] {
			errs[tp] = ErrGroupSubscribedToTopic
			continue
		}
		if _, ok := g.offsets[tp]; ok {
			c.emit(record{typ: recOffsetDelete, group: groupID, tp: tp})
		}
	}
	return errs, nil
}

// ValidateTxnMember is Kafka's check of a TxnOffsetCommit's group fields
// (v3+, KIP-447): a generation for a group that does not exist is
// ILLEGAL_GENERATION; a request naming a member must name a current one of
// the current generation (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
// ILLEGAL_GENERATION). Unlike OffsetCommit, the group's state does not
// matter, and a request without member and generation is always accepted.
func (c *groupCore) ValidateTxnMember(groupID, memberID, instanceID string, generation int32) error {
	g := c.groups[groupID]
	if g == nil {
		if generation >= 0 {
			return ErrIllegalGeneration
		}
		return nil
	}
	if g.cg != nil {
		if generation < 0 && memberID == "" && instanceID == "" {
			return nil
		}
		return validateConsumerCommit(g.cg, memberID, generation, 0, true)
	}
	if generation < 0 && (g.state == StateEmpty || (memberID == "" && instanceID == "")) {
		return nil
	}
	if _, err := g.validateMember(memberID, instanceID); err != nil {
		return err
	}
	if generation != g.generation {
		return ErrIllegalGeneration
	}
	return nil
}

// StageTxn stages a transactional producer's offsets (TxnOffsetCommit).
func (c *groupCore) StageTxn(now time.Time, groupID string, producerID int64, epoch int16, offsets map[TopicPartition]OffsetAndMetadata) error {
	if groupID == "" || len(groupID) > maxNameLen {
		return ErrInvalidGroupID
	}
	for _, tp := range sortedTPs(offsets) {
		if len(tp.Topic) > maxNameLen {
			return ErrInvalidRequest
		}
		if len(offsets[tp].Metadata) > c.cfg.MaxMetadataSize {
			return ErrOffsetMetadataTooLarge
		}
	}
	for _, tp := range sortedTPs(offsets) {
		om := offsets[tp]
		om.CommitTimestamp = now.UnixMilli()
		c.emit(record{typ: recTxnStage, group: groupID, tp: tp, offset: om, producerID: producerID, producerEpoch: epoch})
	}
	return nil
}

// CompleteTxn commits or drops producerID's staged offsets in every group
// (the transaction's markers carry epoch and coordinatorEpoch). It
// reports whether there were any.
func (c *groupCore) CompleteTxn(producerID int64, epoch int16, coordinatorEpoch int32, commit bool) bool {
	for _, g := range c.groups {
		if _, ok := g.pendingTxn[producerID]; ok {
			c.emit(record{typ: recTxnComplete, producerID: producerID, producerEpoch: epoch, coordEpoch: coordinatorEpoch, commit: commit})
			return true
		}
	}
	return false
}

// DeleteTopic drops every group's committed offsets for topic, as Kafka's
// coordinator does when a topic is deleted (so a topic created again
// under the name does not resume from stale offsets).
func (c *groupCore) DeleteTopic(topic string) {
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		for _, tp := range sortedTPs(c.groups[id].offsets) {
			if tp.Topic == topic {
				c.emit(record{typ: recOffsetDelete, group: id, tp: tp})
			}
		}
	}
}

// CommitAdmin commits offsets outside any generation (mirroring).
func (c *groupCore) CommitAdmin(now time.Time, groupID string, offsets map[TopicPartition]OffsetAndMetadata) error {
	if groupID == "" || len(groupID) > maxNameLen {
		return ErrInvalidGroupID
	}
	if g := c.groups[groupID]; g != nil && (len(g.members) > 0 || (g.cg != nil && len(g.cg.members) > 0)) {
		return ErrGroupHasMembers
	}
	for _, tp := range sortedTPs(offsets) {
		om := offsets[tp]
		if len(tp.Topic) > maxNameLen {
			return ErrInvalidRequest
		}
		if len(om.Metadata) > c.cfg.MaxMetadataSize {
			return ErrOffsetMetadataTooLarge
		}
		om.CommitTimestamp = now.UnixMilli() // as Kafka's admin commits: the local commit time
		c.emit(record{typ: recOffsetCommit, group: groupID, tp: tp, offset: om})
	}
	return nil
}

// ClampOffsets lowers every group's committed offset for tp that lies
// above end to end, with an unknown leader epoch (-1), whatever the group's
// state: a mirror's failover cut the partition's log at end, and an offset
// past it would make a consumer skip the records written there next. Offsets
// at or below end are untouched. It returns the groups changed, sorted.
func (c *groupCore) ClampOffsets(now time.Time, tp TopicPartition, end int64) []string {
	ids := make([]string, 0, len(c.groups))
	for id, g := range c.groups {
		if e := g.offsets[tp]; e != nil && e.Offset > end {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		om := c.groups[id].offsets[tp].OffsetAndMetadata
		om.Offset, om.LeaderEpoch, om.CommitTimestamp = end, -1, now.UnixMilli()
		c.emit(record{typ: recOffsetCommit, group: id, tp: tp, offset: om})
	}
	return ids
}

// Offsets returns group's committed offsets (a copy).
func (c *groupCore) Offsets(groupID string) map[TopicPartition]OffsetAndMetadata {
	g := c.groups[groupID]
	if g == nil {
		return nil
	}
	out := make(map[TopicPartition]OffsetAndMetadata, len(g.offsets))
	for tp, e := range g.offsets {
		out[tp] = e.OffsetAndMetadata
	}
	return out
}

// ExpireOffsets is offsets.retention.ms: an Empty group's offsets expire
// retention after it became Empty (KIP-211); a group never managed by the
// coordinator (simple commits only) loses each offset retention after its
// commit. An Empty group left with no offsets is deleted, as Kafka's
// cleanupGroupMetadata does. Deviation: offsets of topics a group with
// members no longer subscribes to are kept until the group is Empty (Kafka
// expires them retention after their commit).
func (c *groupCore) ExpireOffsets(now time.Time) {
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		g := c.groups[id]
		if g.state != StateEmpty || (g.cg != nil && len(g.cg.members) > 0) {
			continue
		}
		for _, tp := range sortedTPs(g.offsets) {
			base := g.stateSince
			if g.protocolType == "" || g.cg != nil {
				base = time.UnixMilli(g.offsets[tp].CommitTimestamp)
			}
			if now.Sub(base) >= c.cfg.OffsetsRetention {
				c.emit(record{typ: recOffsetDelete, group: id, tp: tp})
			}
		}
		if len(g.offsets) == 0 && len(g.pendingTxn) == 0 && len(g.pendingMembers) == 0 {
			c.emit(record{typ: recGroupDelete, group: id})
		}
	}
}

// groupMeta is g's membership as a group metadata record holds it.
func groupMeta(g *group) *groupMetadata {
	meta := &groupMetadata{
		state: g.state, protocolType: g.protocolType, protocol: g.protocol, leader: g.leader,
		generation: g.generation, stateSince: g.stateSince.UnixMilli(),
	}
	for _, m := range g.sortedMembers() {
		meta.members = append(meta.members, memberMetadata{
			id: m.id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			sessionTimeoutMs: int32(m.sessionTimeout / time.Millisecond), rebalanceTimeoutMs: int32(m.rebalanceTimeout / time.Millisecond),
			subscription: m.metadataFor(g.protocol), assignment: m.assignment,
		})
	}
	return meta
}

// checkGroupRecord refuses (ErrRecordTooLarge) g's membership record when
// its body would be longer than the group log holds: written, it would be
// read back as damage, and with the log's resync, frames inside a
// member's metadata would be read as records of their own.
func (c *groupCore) checkGroupRecord(g *group) error {
	if c.knobs.skipCoreBound {
		return nil
	}
	if n := groupRecordSize(g.id, groupMeta(g)); n > c.maxRecord {
		return fmt.Errorf("%w: group %q's state is %d bytes, over the %d a group log record holds", ErrRecordTooLarge, g.id, n, c.maxRecord)
	}
	return nil
}

// storeGroup persists g's membership (at the end of a rebalance and when
// it becomes Empty), as Kafka writes a group metadata record. A record
// too long for the group log is neither applied nor queued: the error is
// the caller's to answer (Kafka's storeGroup callback gets
// MESSAGE_TOO_LARGE and the request UNKNOWN_SERVER_ERROR).
func (c *groupCore) storeGroup(now time.Time, g *group) error {
	if err := c.checkGroupRecord(g); err != nil {
		return err
	}
	c.emit(record{typ: recGroupMetadata, group: g.id, meta: groupMeta(g)})
	return nil
}

// emit applies r and queues it to be persisted.
func (c *groupCore) emit(r record) {
	c.apply(r)
	c.records = append(c.records, r)
}

func (c *groupCore) getOrCreate(id string) *group {
	g := c.groups[id]
	if g == nil {
		now := c.replayNow
		g = newGroup(id, now)
		c.groups[id] = g
	}
	return g
}

// apply is the one place a record changes offsets: live (through emit) and
// when replaying the file. Group metadata records only change membership
// when replaying: live, the membership they describe is already in place.
func (c *groupCore) apply(r record) {
	c.seq++
	if isCGRecord(r.typ) {
		c.applyCG(r)
		return
	}
	switch r.typ {
	case recOffsetCommit:
		g := c.getOrCreate(r.group)
		g.offsets[r.tp] = &offsetEntry{OffsetAndMetadata: r.offset, seq: c.seq}
	case recOffsetDelete:
		if g := c.groups[r.group]; g != nil {
			delete(g.offsets, r.tp)
		}
	case recGroupDelete:
		if g := c.groups[r.group]; g != nil && c.deleted != nil {
			c.deleted[r.group] = g // for the topic store's tombstones
		}
		delete(c.groups, r.group)
	case recTxnStage:
		g := c.getOrCreate(r.group)
		staged := g.pendingTxn[r.producerID]
		if staged == nil {
			staged = map[TopicPartition]*offsetEntry{}
			g.pendingTxn[r.producerID] = staged
		}
		staged[r.tp] = &offsetEntry{OffsetAndMetadata: r.offset, seq: c.seq, producerEpoch: r.producerEpoch}
	case recTxnComplete:
		// r.group set (a marker read back from the topic): that group
		// only; else every group.
		for id, g := range c.groups {
			if r.group != "" && id != r.group {
				continue
			}
			staged, ok := g.pendingTxn[r.producerID]
			if !ok {
				continue
			}
			delete(g.pendingTxn, r.producerID)
			if !r.commit {
				continue
			}
			for tp, e := range staged {
				if cur := g.offsets[tp]; cur == nil || cur.seq < e.seq {
					g.offsets[tp] = &offsetEntry{OffsetAndMetadata: e.OffsetAndMetadata, seq: e.seq}
				}
			}
		}
	case recGroupMetadata:
		g := c.getOrCreate(r.group)
		g.lastMeta = r.meta
		if c.replaying {
			c.restoreGroup(g, r.meta)
		}
	}
}

// restoreGroup rebuilds membership from a group metadata record at load:
// members' sessions start again at load time.
func (c *groupCore) restoreGroup(g *group, meta *groupMetadata) {
	g.state, g.stateSince = meta.state, time.UnixMilli(meta.stateSince)
	if g.state != StateStable {
		g.state = StateEmpty
	}
	g.protocolType, g.protocol, g.leader, g.generation = meta.protocolType, meta.protocol, meta.leader, meta.generation
	g.members, g.static, g.pendingSync = map[string]*member{}, map[string]string{}, map[string]bool{}
	for _, mm := range meta.members {
		c.joinSeq++
		m := &member{
			id: mm.id, instanceID: mm.instanceID, clientID: mm.clientID, clientHost: mm.clientHost,
			sessionTimeout:   time.Duration(mm.sessionTimeoutMs) * time.Millisecond,
			rebalanceTimeout: time.Duration(mm.rebalanceTimeoutMs) * time.Millisecond,
			protocolType:     meta.protocolType, protocols: []Protocol{{Name: meta.protocol, Metadata: mm.subscription}},
			assignment: mm.assignment, lastHeartbeat: c.replayNow, joinedSeq: c.joinSeq,
		}
		g.members[m.id] = m
		if m.instanceID != "" {
			g.static[m.instanceID] = m.id
		}
	}
	if len(g.members) == 0 {
		g.state = StateEmpty
	}
}

// snapshotRecords is the live state as records, in an order that replays
// to the same state: for each group its last metadata, then its offsets
// and staged offsets in the order they were written.
func (c *groupCore) snapshotRecords() []record {
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []record
	for _, id := range ids {
		g := c.groups[id]
		if g.lastMeta != nil {
			out = append(out, record{typ: recGroupMetadata, group: id, meta: g.lastMeta})
		}
		if g.cg != nil {
			out = append(out, snapshotCG(id, g.cg)...)
		}
		type seqRec struct {
			seq uint64
			r   record
		}
		var rs []seqRec
		for tp, e := range g.offsets {
			rs = append(rs, seqRec{e.seq, record{typ: recOffsetCommit, group: id, tp: tp, offset: e.OffsetAndMetadata}})
		}
		for pid, staged := range g.pendingTxn {
			for tp, e := range staged {
				rs = append(rs, seqRec{e.seq, record{typ: recTxnStage, group: id, tp: tp, offset: e.OffsetAndMetadata, producerID: pid, producerEpoch: e.producerEpoch}})
			}
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].seq < rs[j].seq })
		for _, r := range rs {
			out = append(out, r.r)
		}
	}
	return out
}

func sortedTPs[V any](m map[TopicPartition]V) []TopicPartition {
	tps := make([]TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	return tps
}
