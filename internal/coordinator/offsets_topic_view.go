package coordinator

// What __consumer_offsets holds, as the coordinator last wrote or loaded
// it, and the translation of the core's records into the topic's.

import "sort"

// offsetsView is, per group, what the topic holds of the group's
// metadata: the encoded GroupMetadata value and the KIP-848 records. A
// core call's records are translated against it (a group deleted becomes
// a tombstone for each key the topic holds of it). Offsets are not kept
// here (a second copy of every offset made the start-up slower): a
// commit or deletion is written as the core made it, and a deleted
// group's offsets are those the core had (groupCore.deleted).
type offsetsView struct {
	n      int32
	groups map[string]*viewGroup
	// txnGroups: the groups each producer has staged offsets in, whose
	// partitions get the producer's marker when its transaction ends.
	txnGroups map[int64]map[string]bool
}

type viewGroup struct {
	meta string           // the encoded GroupMetadataValue, "" when none
	cg   map[cgKey]string // encoded consumer group record values
}

// cgKey names a consumer group record within its group: its type and
// the member id or regular expression of its key.
type cgKey struct {
	typ    recordType
	member string
}

func newOffsetsView(n int32) *offsetsView {
	return &offsetsView{n: n, groups: map[string]*viewGroup{}, txnGroups: map[int64]map[string]bool{}}
}

// viewOf is what the topic holds once it holds c's state.
func viewOf(c *groupCore, n int32) *offsetsView {
	v := newOffsetsView(n)
	for id, g := range c.groups {
		vg := v.group(id)
		if g.lastMeta != nil {
			vg.meta = string(groupValue(g.lastMeta))
		}
		if g.cg != nil {
			for _, r := range snapshotCG(id, g.cg) {
				vg.cg[cgKey{r.typ, cgSubKey(&r)}] = string(cgTopicValue(&r))
			}
		}
		for pid := range g.pendingTxn {
			v.stagedIn(pid, id)
		}
	}
	return v
}

func (v *offsetsView) group(id string) *viewGroup {
	g := v.groups[id]
	if g == nil {
		g = &viewGroup{cg: map[cgKey]string{}}
		v.groups[id] = g
	}
	return g
}

func (v *offsetsView) stagedIn(pid int64, group string) {
	gs := v.txnGroups[pid]
	if gs == nil {
		gs = map[string]bool{}
		v.txnGroups[pid] = gs
	}
	gs[group] = true
}

// topicOp is one append to a partition: records (plain, or
// transactional for txn), or a marker.
type topicOp struct {
	recs       []TopicRecord
	txn        TopicProducer
	marker     bool
	commit     bool
	coordEpoch int32
}

// pending collects the appends, per partition, in order.
type pending map[int32][]topicOp

func (out pending) records(p int32, r TopicRecord, txn TopicProducer) {
	ops := out[p]
	if n := len(ops); n > 0 && !ops[n-1].marker && ops[n-1].txn == txn {
		ops[n-1].recs = append(ops[n-1].recs, r)
		return
	}
	out[p] = append(ops, topicOp{recs: []TopicRecord{r}, txn: txn})
}

func (v *offsetsView) add(out pending, group string, r TopicRecord) {
	out.records(PartitionFor(group, v.n), r, noProducer)
}

// setOffset writes group's offset for tp as the core has it now (absent:
// a tombstone).
func (v *offsetsView) setOffset(out pending, c *groupCore, group string, tp TopicPartition) {
	if g := c.groups[group]; g != nil {
		if e := g.offsets[tp]; e != nil {
			v.add(out, group, TopicRecord{Key: offsetKey(group, tp), Value: offsetValue(e.OffsetAndMetadata)})
			return
		}
	}
	v.add(out, group, TopicRecord{Key: offsetKey(group, tp)})
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

// setCG writes one consumer group record as the core emitted it.
func (v *offsetsView) setCG(out pending, r *record) {
	k := cgKey{r.typ, cgSubKey(r)}
	val := cgTopicValue(r)
	if val == nil {
		if vg := v.groups[r.group]; vg != nil {
			delete(vg.cg, k)
		}
	} else {
		v.group(r.group).cg[k] = string(val)
	}
	v.add(out, r.group, TopicRecord{Key: cgTopicKey(r), Value: val})
}

// diffCG writes group's consumer group records that differ from the
// core's state (tombstones for those it no longer has).
func (v *offsetsView) diffCG(out pending, c *groupCore, group string) {
	want := map[cgKey]*record{}
	if g := c.groups[group]; g != nil && g.cg != nil {
		for _, r := range snapshotCG(group, g.cg) {
			r := r
			want[cgKey{r.typ, cgSubKey(&r)}] = &r
		}
	}
	vg := v.groups[group]
	var gone []cgKey
	if vg != nil {
		for k := range vg.cg {
			if want[k] == nil {
				gone = append(gone, k)
			}
		}
	}
	sortCGKeys(gone)
	for _, k := range gone {
		v.setCG(out, cgTombstone(k.typ, group, k.member))
	}
	keys := make([]cgKey, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sortCGKeys(keys)
	for _, k := range keys {
		r := want[k]
		if vg == nil || vg.cg[k] != string(cgTopicValue(r)) {
			v.setCG(out, r)
		}
	}
}

func sortCGKeys(ks []cgKey) {
	sortSlice(ks, func(a, b cgKey) bool {
		if a.typ != b.typ {
			return a.typ < b.typ
		}
		return a.member < b.member
	})
}

// diffGroup writes everything of group that differs from the core:
// offsets that had, as have (the core's before the change, or the
// topic's as loaded), differ from the core's now, then the consumer
// group records and the metadata against the view.
func (v *offsetsView) diffGroup(out pending, c *groupCore, group string, had map[TopicPartition]*offsetEntry) {
	tps := map[TopicPartition]bool{}
	var now map[TopicPartition]*offsetEntry
	if g := c.groups[group]; g != nil {
		now = g.offsets
	}
	for tp := range now {
		tps[tp] = true
	}
	for tp := range had {
		tps[tp] = true
	}
	for _, tp := range sortedTPs(tps) {
		w, h := now[tp], had[tp]
		switch {
		case w == nil && h == nil:
		case w == nil || h == nil || w.OffsetAndMetadata != h.OffsetAndMetadata:
			v.setOffset(out, c, group, tp)
		}
	}
	v.diffCG(out, c, group)
	v.setMeta(out, c, group)
	if vg := v.groups[group]; vg != nil && vg.meta == "" && len(vg.cg) == 0 {
		delete(v.groups, group)
	}
}

// follow turns one core call's records into the topic's appends.
func (v *offsetsView) follow(c *groupCore, recs []record) pending {
	if len(recs) == 0 {
		return nil
	}
	out := pending{}
	for i := range recs {
		r := &recs[i]
		if isCGRecord(r.typ) {
			v.setCG(out, r)
			continue
		}
		switch r.typ {
		case recOffsetCommit, recOffsetDelete:
			v.setOffset(out, c, r.group, r.tp)
		case recGroupMetadata:
			v.setMeta(out, c, r.group)
		case recGroupDelete:
			var had map[TopicPartition]*offsetEntry
			if g := c.deleted[r.group]; g != nil {
				had = g.offsets
			}
			v.diffGroup(out, c, r.group, had)
		case recTxnStage:
			v.stagedIn(r.producerID, r.group)
			out.records(PartitionFor(r.group, v.n), TopicRecord{Key: offsetKey(r.group, r.tp), Value: offsetValue(r.offset)},
				TopicProducer{ID: r.producerID, Epoch: r.producerEpoch})
		case recTxnComplete:
			groups := sortedKeys(v.txnGroups[r.producerID])
			marked := map[int32]bool{}
			for _, id := range groups {
				p := PartitionFor(id, v.n)
				if !marked[p] {
					marked[p] = true
					out[p] = append(out[p], topicOp{marker: true, commit: r.commit, coordEpoch: r.coordEpoch,
						txn: TopicProducer{ID: r.producerID, Epoch: r.producerEpoch}})
				}
			}
			delete(v.txnGroups, r.producerID)
		}
	}
	return out
}

// reconcile brings the view (the topic as loaded) to the core's state
// (the group log's, at a migration): every group that differs, and the
// staged offsets the topic lacks, as transactional batches of their
// producers.
func (v *offsetsView) reconcile(c *groupCore, loaded *groupCore) pending {
	out := pending{}
	ids := map[string]bool{}
	for id := range c.groups {
		ids[id] = true
	}
	for id := range v.groups {
		ids[id] = true
	}
	for id := range loaded.groups {
		ids[id] = true
	}
	for _, id := range sortedKeys(ids) {
		var had map[TopicPartition]*offsetEntry
		if lg := loaded.groups[id]; lg != nil {
			had = lg.offsets
		}
		v.diffGroup(out, c, id, had)
		g := c.groups[id]
		if g == nil {
			continue
		}
		var have map[int64]map[TopicPartition]*offsetEntry
		if lg := loaded.groups[id]; lg != nil {
			have = lg.pendingTxn
		}
		pids := make([]int64, 0, len(g.pendingTxn))
		for pid := range g.pendingTxn {
			pids = append(pids, pid)
		}
		sortSlice(pids, func(a, b int64) bool { return a < b })
		for _, pid := range pids {
			staged := g.pendingTxn[pid]
			for _, tp := range sortedTPs(staged) {
				e := staged[tp]
				if h := have[pid][tp]; h != nil && h.OffsetAndMetadata == e.OffsetAndMetadata {
					continue
				}
				v.stagedIn(pid, id)
				out.records(PartitionFor(id, v.n), TopicRecord{Key: offsetKey(id, tp), Value: offsetValue(e.OffsetAndMetadata)},
					TopicProducer{ID: pid, Epoch: e.producerEpoch})
			}
		}
	}
	return out
}

func sortSlice[T any](s []T, less func(a, b T) bool) {
	sort.Slice(s, func(i, j int) bool { return less(s[i], s[j]) })
}
