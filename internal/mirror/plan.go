package mirror

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/partition"
)

// PartitionPlan is one partition of a failover plan: what `mirror stop`
// would do to it now, and what the source has that it would never get.
type PartitionPlan struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	State     State  `json:"state"`
	// SourceHighWatermark and SourceLastStable are the source's offsets in
	// the last fetch answer, SourceSeenAt (unix ms) when it came and
	// SourceSeenAgoMillis how long ago; -1 and 0 when none came yet.
	SourceHighWatermark int64 `json:"source_high_watermark"`
	SourceLastStable    int64 `json:"source_last_stable_offset"`
	SourceSeenAt        int64 `json:"source_seen_at_ms"`
	SourceSeenAgoMillis int64 `json:"source_seen_ago_ms"`
	LocalLogEndOffset   int64 `json:"local_log_end_offset"`
	LocalLastStable     int64 `json:"local_last_stable_offset"`
	// WouldTruncate is what STOPPING cuts: local LSO to log end (the
	// records of transactions still open locally, and what follows them).
	WouldTruncate    int64 `json:"would_truncate"`
	OpenTransactions int   `json:"open_transactions"`
	// MissingRecords is what the source has (its high watermark, asked
	// when the plan is made; as last seen when the source does not
	// answer) that the local log does not, in offsets.
	MissingRecords int64 `json:"missing_records"`
	// The failover's loss in records, from the batches themselves: the
	// local ones STOPPING cuts (local LSO to log end) and the source's
	// not yet mirrored (local log end to the source's high watermark),
	// read when the plan is made (the source's read_uncommitted). Their
	// records are classified by what became of them at the source:
	// LostRecords were acknowledged (not transactional, or their
	// transaction committed): the failover loses them; UncommittedRecords
	// belong to UncommittedTransactions still open at the source (the
	// failover aborts them: no consumer of read_committed has seen them);
	// AbortedRecords were aborted at the source (never visible). Control
	// records (markers) are not counted. -1 when the source could not be
	// read (SourceError says why). ScanComplete is false when the plan read
	// only the first scanMaxBytes: the counts are then those of that part.
	LostRecords             int64 `json:"lost_records"`
	UncommittedRecords      int64 `json:"uncommitted_records"`
	UncommittedTransactions int   `json:"uncommitted_transactions"`
	AbortedRecords          int64 `json:"aborted_records"`
	ScanComplete            bool  `json:"scan_complete"`
	// RPOMillis is the RPO in time: the age, at the plan (At), of the
	// oldest lost record, from its batch's timestamp (the source's bytes:
	// the mirror copies batches unchanged). OldestLostTimestamp and
	// NewestLostTimestamp (-1: nothing lost) bound the lost records'
	// timestamps; TimestampType says whose clock wrote them: CreateTime,
	// the producers' (the batch's base timestamp is its first record's),
	// or LogAppendTime, the source broker's at the append. 0 when nothing
	// is lost.
	RPOMillis           int64  `json:"rpo_ms"`
	OldestLostTimestamp int64  `json:"oldest_lost_timestamp_ms"`
	NewestLostTimestamp int64  `json:"newest_lost_timestamp_ms"`
	TimestampType       string `json:"timestamp_type,omitempty"`
	// DivergenceTruncate is the failback section: for a partition that a
	// `mirror start` would (re)start — not yet in the mirror (state ""),
	// PREPARING, FAILED or STOPPED — the local offsets its PREPARING
	// would cut where the local log diverges from the source
	// (DivergenceCut to the log end; divergenceCut has the method). 0 for
	// a partition already aligned; -1 when the source could not be asked.
	DivergenceTruncate int64 `json:"divergence_truncate"`
	DivergenceCut      int64 `json:"divergence_cut"`
	// Modes is the failover's loss in each mode, side by side
	// (planmodes.go); the fields above are those of the mirror's mode.
	Modes []ModeLoss `json:"modes,omitempty"`
	// Unknown is set when no fetch answer came from the source yet, so the
	// missing records cannot be counted.
	Unknown     bool   `json:"source_unknown,omitempty"`
	SourceError string `json:"source_error,omitempty"`
}

// GroupPlan is a consumer group on the destination.
type GroupPlan struct {
	Group string `json:"group"`
	State string `json:"state"`
	// Active: the group has members on the destination (they commit for
	// themselves; the offset sync leaves it alone).
	Active bool `json:"active"`
	// LastSyncAgoMillis is the age of the group's last offset sync from
	// the source; -1 when this mirror never synced it (since it started).
	LastSyncAgoMillis int64 `json:"last_sync_ago_ms"`
}

// Plan is the dry run of Stop: the report of what a failover of the
// topics would do now. Computing it changes nothing.
type Plan struct {
	Mirror     string          `json:"mirror"`
	At         int64           `json:"at_ms"`
	Partitions []PartitionPlan `json:"partitions"`
	Groups     []GroupPlan     `json:"groups"`
	// The partitions' counts summed (LostRecords: those known), RPOMillis
	// their largest.
	WouldTruncate           int64 `json:"would_truncate"`
	MissingRecords          int64 `json:"missing_records"`
	OpenTransactions        int   `json:"open_transactions"`
	LostRecords             int64 `json:"lost_records"`
	UncommittedRecords      int64 `json:"uncommitted_records"`
	UncommittedTransactions int   `json:"uncommitted_transactions"`
	RPOMillis               int64 `json:"rpo_ms"`
	DivergenceTruncate      int64 `json:"divergence_truncate"`
	// FailoverMode is the mirror's (mirror.failover.mode), which the
	// counts above follow; Modes has both modes' counts summed.
	FailoverMode FailoverMode `json:"failover_mode"`
	Modes        []ModeLoss   `json:"modes"`
	// AtRisk: a failover now would lose records (truncated or missing),
	// a partition's source offsets are unknown, or a start of a partition
	// not yet mirrored (or PREPARING, FAILED) would cut local records.
	AtRisk bool `json:"at_risk"`
	// Match is how the request's topic patterns were resolved (against
	// the mirror's topics, as a stop resolves them); nil without patterns.
	Match *TopicMatch `json:"match,omitempty"`
}

// groupLister is what Plan needs from the local group coordinator beyond
// GroupOffsets; coordinator.Groups has it.
type groupLister interface {
	ListGroups() []coordinator.GroupSummary
}

// planSourceTimeout bounds what a plan waits for the source (the loss
// scan and the divergence search); a source that does not answer leaves
// the last seen offsets and a SourceError.
const planSourceTimeout = 5 * time.Second

// Plan computes the failover plan of the named topics (all of the
// mirror's when none). It reads local offsets and batches and asks the
// source (Fetch, OffsetForLeaderEpoch); it changes nothing. A named topic
// the mirror does not have yet, but which exists locally, is planned as a
// start would find it: its divergence from the source (failback).
func (m *Manager) Plan(ctx context.Context, name string, topics []string) (Plan, error) {
	rt, err := m.runtime(name)
	if err != nil {
		return Plan{}, err
	}
	var known, fresh []string
	for _, t := range topics {
		rt.mu.Lock()
		_, mirrored := rt.spec.Topics[t]
		rt.mu.Unlock()
		if mirrored || len(m.local.Partitions(t)) == 0 {
			known = append(known, t)
		} else {
			fresh = append(fresh, t)
		}
	}
	var tps []tp
	if len(known) > 0 || len(fresh) == 0 {
		if tps, err = m.partitionsOf(rt, known, Preparing, Mirroring, Paused, Stopping, Failed, Stopped); err != nil {
			return Plan{}, err
		}
	}
	now := time.Now().UnixMilli()
	mode := rt.settings().FailoverMode
	pl := Plan{Mirror: rt.spec.Name, At: now, Partitions: []PartitionPlan{}, Groups: []GroupPlan{}, FailoverMode: mode}
	type item struct {
		k   tp
		rec partitionRecord
		f   *fetcher
		p   *partition.Partition
	}
	rt.mu.Lock()
	items := make([]item, 0, len(tps))
	for _, k := range tps {
		items = append(items, item{k: k, rec: *rt.spec.Topics[k.topic].Partitions[k.partition], f: rt.fetchers[k]})
	}
	synced := make(map[string]int64, len(rt.groupSyncedAt))
	for g, at := range rt.groupSyncedAt {
		synced[g] = at
	}
	rt.mu.Unlock()
	for _, t := range fresh {
		for idx := range m.local.Partitions(t) {
			items = append(items, item{k: tp{t, int32(idx)}, rec: partitionRecord{State: NoState, LastMirroredOffset: -1}})
		}
	}
	for i := range items {
		if parts := m.local.Partitions(items[i].k.topic); int(items[i].k.partition) < len(parts) {
			items[i].p = parts[items[i].k.partition]
		}
	}
	ctx, cancel := context.WithTimeout(ctx, planSourceTimeout)
	defer cancel()
	src, srcErr := m.source(rt)
	pl.Partitions = make([]PartitionPlan, len(items))
	parallel(len(items), func(i int) {
		it := items[i]
		pl.Partitions[i] = m.planPartition(ctx, now, src, srcErr, it.k, it.rec, it.f, it.p, mode)
	})
	pl.Modes = sumModes(pl.Partitions)
	for _, pp := range pl.Partitions {
		pl.WouldTruncate += pp.WouldTruncate
		pl.MissingRecords += pp.MissingRecords
		pl.OpenTransactions += pp.OpenTransactions
		pl.LostRecords += max(pp.LostRecords, 0)
		pl.UncommittedRecords += pp.UncommittedRecords
		pl.UncommittedTransactions += pp.UncommittedTransactions
		pl.RPOMillis = max(pl.RPOMillis, pp.RPOMillis)
		pl.DivergenceTruncate += max(pp.DivergenceTruncate, 0)
		starts := pp.State == NoState || pp.State == Preparing || pp.State == Failed
		pl.AtRisk = pl.AtRisk || pp.WouldTruncate > 0 || pp.MissingRecords > 0 || pp.Unknown || pp.LostRecords > 0 ||
			(starts && pp.DivergenceTruncate != 0)
	}
	if gl, ok := m.opts.Groups.(groupLister); ok && m.opts.Groups != nil {
		for _, g := range gl.ListGroups() {
			gp := GroupPlan{Group: g.Group, State: g.State.String(), Active: m.opts.Groups.GroupIsActive(g.Group), LastSyncAgoMillis: -1}
			if at, ok := synced[g.Group]; ok {
				gp.LastSyncAgoMillis = now - at
			}
			pl.Groups = append(pl.Groups, gp)
		}
	}
	sort.Slice(pl.Groups, func(i, j int) bool { return pl.Groups[i].Group < pl.Groups[j].Group })
	return pl, nil
}

// planPartition is one partition of Plan.
func (m *Manager) planPartition(ctx context.Context, now int64, src *source, srcErr error, k tp, rec partitionRecord, f *fetcher, p *partition.Partition, mode FailoverMode) PartitionPlan {
	pp := PartitionPlan{Topic: k.topic, Partition: k.partition, State: rec.State,
		SourceHighWatermark: -1, SourceLastStable: -1, LocalLogEndOffset: -1, LocalLastStable: -1,
		OldestLostTimestamp: -1, NewestLostTimestamp: -1, LostRecords: -1, DivergenceTruncate: 0, DivergenceCut: -1}
	if p == nil {
		pp.Unknown = true
		return pp
	}
	o := p.Offsets()
	pp.LocalLogEndOffset, pp.LocalLastStable = o.LogEnd, o.LastStable
	for _, e := range p.Producers() {
		if e.CurrentTxnFirstOffset >= 0 {
			pp.OpenTransactions++
		}
	}
	if f != nil {
		pp.SourceHighWatermark, pp.SourceLastStable = f.sourceHW.Load(), f.sourceLSO.Load()
		if at := f.sourceSeenAt.Load(); at > 0 {
			pp.SourceSeenAt, pp.SourceSeenAgoMillis = at, now-at
		}
	}
	switch rec.State {
	case NoState, Preparing, Failed, Stopped:
		// What a (re)start would cut: the failback section.
		if srcErr != nil {
			pp.DivergenceTruncate, pp.SourceError = -1, srcErr.Error()
		} else if d, err := m.divergenceOf(ctx, src, k.topic, k.partition, p); err != nil {
			pp.DivergenceTruncate, pp.SourceError = -1, err.Error()
		} else {
			pp.DivergenceTruncate, pp.DivergenceCut = d.Truncates(), d.Cut
		}
	}
	switch rec.State {
	case NoState, Stopped, Stopping:
		// Nothing left for a stop to cut or to miss (a resumed stop
		// past its truncation has persisted its last mirrored offset).
		pp.LostRecords, pp.ScanComplete = 0, true
		return pp
	}
	if rec.LastMirroredOffset < 0 {
		pp.WouldTruncate = o.LogEnd - o.LastStable
	}
	// The loss scan: local LSO..log end, then the source from there.
	scan := newLossScan(o.LastStable)
	err := scan.scanLocal(p, o.LogEnd)
	if err == nil && scan.next < o.LogEnd {
		err = fmt.Errorf("local scan stopped at %d of %d", scan.next, o.LogEnd)
	}
	scan.next = max(scan.next, o.LogEnd)
	if err == nil {
		err = srcErr
	}
	if err == nil {
		var hw, lso int64
		if hw, lso, err = scan.scanSource(ctx, src, k.topic, k.partition); err == nil {
			pp.SourceHighWatermark, pp.SourceLastStable = hw, lso
			pp.SourceSeenAt, pp.SourceSeenAgoMillis = time.Now().UnixMilli(), 0
		}
	}
	if pp.SourceHighWatermark >= 0 {
		pp.MissingRecords = max(pp.SourceHighWatermark-o.LogEnd, 0)
	} else {
		pp.Unknown = true // no answer from the source yet: nothing known
	}
	if err != nil {
		pp.SourceError = err.Error()
		return pp
	}
	pp.LostRecords, pp.AbortedRecords = scan.lost, scan.aborted
	pp.UncommittedRecords, pp.UncommittedTransactions = scan.open()
	pp.ScanComplete = scan.next >= pp.SourceHighWatermark
	pp.TimestampType = scan.tsType
	if scan.lost > 0 {
		pp.OldestLostTimestamp, pp.NewestLostTimestamp = scan.oldestTS, scan.newestTS
		pp.RPOMillis = max(now-scan.oldestTS, 0)
	}
	pp.Modes = modeLosses(now, mode, pp, scan)
	if mode == FailoverAbortOpenTxns {
		// The mirror's mode cuts nothing: the counts are the abort's.
		pp.WouldTruncate, pp.LostRecords = 0, scan.lostPastLocal
		pp.OldestLostTimestamp, pp.NewestLostTimestamp, pp.RPOMillis = scan.pastOldestTS, scan.pastNewestTS, 0
		if scan.lostPastLocal > 0 {
			pp.RPOMillis = max(now-scan.pastOldestTS, 0)
		}
	}
	return pp
}

// splitTopics parses the plan endpoint's ?topics=a,b (names).
func splitTopics(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
