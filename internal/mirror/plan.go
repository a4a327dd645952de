package mirror

import (
	"sort"
	"strings"
	"time"

	"github.com/minibroker/minibroker/internal/coordinator"
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
	// MissingRecords is what the source had (its high watermark as last
	// seen) that the local log does not: records acknowledged at the
	// source that the failover loses. MissingMillis is how long the mirror
	// has not been caught up (0 when it is): the RPO in time. minibroker
	// does not fetch the source's batches past what it mirrors, so their
	// own timestamps are unknown; LocalNewestTimestamp is the newest
	// batch timestamp mirrored, to compare with the source's.
	MissingRecords       int64 `json:"missing_records"`
	MissingMillis        int64 `json:"missing_ms"`
	LocalNewestTimestamp int64 `json:"local_newest_timestamp_ms"`
	// Unknown is set when no fetch answer came from the source yet, so the
	// missing records cannot be counted.
	Unknown bool `json:"source_unknown,omitempty"`
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
	// WouldTruncate, MissingRecords and OpenTransactions sum the
	// partitions'.
	WouldTruncate    int64 `json:"would_truncate"`
	MissingRecords   int64 `json:"missing_records"`
	OpenTransactions int   `json:"open_transactions"`
	// AtRisk: a failover now would lose records (truncated or missing),
	// or a partition's source offsets are unknown.
	AtRisk bool `json:"at_risk"`
}

// groupLister is what Plan needs from the local group coordinator beyond
// GroupOffsets; coordinator.Groups has it.
type groupLister interface {
	ListGroups() []coordinator.GroupSummary
}

// Plan computes the failover plan of the named topics (all of the
// mirror's when none). It reads offsets and states only.
func (m *Manager) Plan(name string, topics []string) (Plan, error) {
	rt, err := m.runtime(name)
	if err != nil {
		return Plan{}, err
	}
	tps, err := m.partitionsOf(rt, topics, Preparing, Mirroring, Paused, Stopping, Failed, Stopped)
	if err != nil {
		return Plan{}, err
	}
	now := time.Now().UnixMilli()
	pl := Plan{Mirror: rt.spec.Name, At: now, Partitions: []PartitionPlan{}, Groups: []GroupPlan{}}
	type item struct {
		k   tp
		rec partitionRecord
		f   *fetcher
	}
	m.mu.Lock()
	items := make([]item, 0, len(tps))
	for _, k := range tps {
		items = append(items, item{k, *rt.spec.Topics[k.topic].Partitions[k.partition], rt.fetchers[k]})
	}
	synced := make(map[string]int64, len(rt.groupSyncedAt))
	for g, at := range rt.groupSyncedAt {
		synced[g] = at
	}
	m.mu.Unlock()
	for _, it := range items {
		pp := PartitionPlan{Topic: it.k.topic, Partition: it.k.partition, State: it.rec.State,
			SourceHighWatermark: -1, SourceLastStable: -1, LocalLogEndOffset: -1, LocalLastStable: -1, LocalNewestTimestamp: -1}
		parts := m.local.Partitions(it.k.topic)
		if int(it.k.partition) < len(parts) {
			p := parts[it.k.partition]
			o := p.Offsets()
			pp.LocalLogEndOffset, pp.LocalLastStable = o.LogEnd, o.LastStable
			for _, e := range p.Producers() {
				if e.CurrentTxnFirstOffset >= 0 {
					pp.OpenTransactions++
				}
			}
			_, pp.LocalNewestTimestamp = p.MaxTimestamp()
		}
		// A stopped partition, or a resumed stop past its truncation, has
		// nothing left to cut or to miss.
		if it.rec.State != Stopped && it.rec.LastMirroredOffset < 0 && pp.LocalLogEndOffset >= 0 {
			pp.WouldTruncate = pp.LocalLogEndOffset - pp.LocalLastStable
		}
		if f := it.f; f != nil {
			pp.SourceHighWatermark, pp.SourceLastStable = f.sourceHW.Load(), f.sourceLSO.Load()
			if at := f.sourceSeenAt.Load(); at > 0 {
				pp.SourceSeenAt, pp.SourceSeenAgoMillis = at, now-at
			}
			if pp.SourceHighWatermark >= 0 {
				pp.MissingRecords = max(pp.SourceHighWatermark-pp.LocalLogEndOffset, 0)
				if pp.MissingRecords > 0 {
					pp.MissingMillis = now - f.caughtUpAt.Load()
				}
			} else {
				pp.Unknown = true
			}
		} else if it.rec.State != Stopped && it.rec.State != Stopping {
			pp.Unknown = true // no fetcher yet (PREPARING, FAILED): nothing seen
		}
		pl.WouldTruncate += pp.WouldTruncate
		pl.MissingRecords += pp.MissingRecords
		pl.OpenTransactions += pp.OpenTransactions
		pl.AtRisk = pl.AtRisk || pp.WouldTruncate > 0 || pp.MissingRecords > 0 || pp.Unknown
		pl.Partitions = append(pl.Partitions, pp)
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

// splitTopics parses the plan endpoint's ?topics=a,b (empty: all).
func splitTopics(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
