package mirror

import (
	"maps"
	"sort"
	"time"
)

// PartitionStatus is one mirrored partition as `mirror describe` shows it.
type PartitionStatus struct {
	Topic             string `json:"topic"`
	Partition         int32  `json:"partition"`
	State             State  `json:"state"`
	LocalLogEndOffset int64  `json:"local_log_end_offset"`
	// LocalHighWatermark is what local consumers can read (it trails the
	// log end only while an append is being applied).
	LocalHighWatermark int64 `json:"local_high_watermark"`
	SourceHighWater    int64 `json:"source_high_watermark"`
	// SourceLastStable is the source's last stable offset: the fetcher
	// reads read_committed, so nothing past it is mirrored yet.
	SourceLastStable int64 `json:"source_last_stable_offset"`
	// WaitingForSourceLSOSince (unix ms, 0 when not) is set while the
	// mirror has everything up to the source's LSO and the source holds
	// records past it: a transaction open at the source, seen open at
	// least since then. The lag cannot close until it ends.
	WaitingForSourceLSOSince int64 `json:"waiting_for_source_lso_since_ms,omitempty"`
	LagRecords               int64 `json:"lag_records"`
	LagMillis                int64 `json:"lag_ms"`
	LastMirroredOffset       int64 `json:"last_mirrored_offset"`
	BarrierOffset            int64 `json:"barrier_offset"`
	// LostAtFailover counts the offsets past the local LSO that STOPPING
	// truncated (asynchronous replication loses them by design).
	LostAtFailover int64 `json:"lost_at_failover"`
	// AbortedAtFailover counts the transactions open in the local log
	// that STOPPING aborted (mirror.failover.mode abort-open-transactions:
	// their records stay, never visible to read_committed consumers), and
	// FailoverMode is the mode the failover ran in (empty before one).
	AbortedAtFailover int64        `json:"aborted_at_failover,omitempty"`
	FailoverMode      FailoverMode `json:"failover_mode,omitempty"`
	FetchErrors       int64        `json:"fetch_errors"`
	// SourceUnreachable is set while the fetcher's last word from the
	// source is an error (LastError); the lag is then the last known one
	// (LagRecords -1: never known) and LagMillis keeps growing.
	SourceUnreachable bool `json:"source_unreachable,omitempty"`
	// SourceSeenAtMs is when the source last answered a fetch (unix ms).
	SourceSeenAtMs int64  `json:"source_seen_at_ms,omitempty"`
	LastError      string `json:"last_error,omitempty"`
	Reason         string `json:"reason,omitempty"`
	// Retries counts the automatic restarts of a partition FAILED for a
	// retriable reason (retry.go) since it last mirrored; NextRetryAt
	// (unix ms) is when the next one is due, 0 when none is.
	Retries     int   `json:"retries"`
	NextRetryAt int64 `json:"next_retry_at_ms,omitempty"`
	// Retriable: the FAILED partition's reason is retried automatically.
	Retriable bool `json:"retriable,omitempty"`
	// Truncated is what the last PREPARING cut from the local log to align
	// it with the source (the failback case), nil when it cut nothing.
	Truncated *PartitionTruncation `json:"truncated,omitempty"`
}

// Status is a mirror as `mirror describe` shows it.
type Status struct {
	Name            string   `json:"name"`
	Source          []string `json:"source"`
	ClientID        string   `json:"client_id,omitempty"`
	SourceClusterID string   `json:"source_cluster_id,omitempty"`
	// SourceConfig is the source's security settings, secrets shown as
	// Hidden.
	SourceConfig map[string]string `json:"source_config,omitempty"`
	// Config is every mirror setting (settings.go) with its value, the
	// default when not set, secrets shown as Hidden.
	Config map[string]string `json:"config"`
	// AutoTopics: the mirror follows its topic filters (started without
	// topics); SkippedTopics are the source topics they select that it
	// left alone, with why.
	AutoTopics    bool              `json:"auto_topics,omitempty"`
	SkippedTopics map[string]string `json:"skipped_topics,omitempty"`
	Partitions    []PartitionStatus `json:"partitions"`
	// Start is the report of the start that answered (POST …/start only).
	Start *StartReport `json:"start,omitempty"`
	// ACLSync is the last sync of the source's ACLs (none before the
	// first).
	ACLSync *ACLSyncStatus `json:"acl_sync,omitempty"`
	// Stop is what a stop did (its answer only).
	Stop *StopResult `json:"stop,omitempty"`
	// Match is how the request's topic patterns were resolved (the
	// answer of a start, stop, pause or resume given topic_patterns).
	Match *TopicMatch `json:"match,omitempty"`
}

// Describe returns a mirror's state, per partition.
func (m *Manager) Describe(name string) (Status, error) {
	rt, err := m.runtime(name)
	if err != nil {
		return Status{}, err
	}
	rt.mu.Lock()
	st := Status{Name: rt.spec.Name, Source: rt.spec.Source, ClientID: rt.spec.ClientID, SourceClusterID: rt.spec.SourceClusterID,
		SourceConfig: RedactSourceConfig(rt.spec.SourceConfig), Config: RedactSettings(rt.spec.Config),
		AutoTopics: rt.spec.AutoTopics}
	if rt.aclSync != nil {
		s := *rt.aclSync
		st.ACLSync = &s
	}
	if len(rt.skipped) > 0 {
		st.SkippedTopics = maps.Clone(rt.skipped)
	}
	type item struct {
		k   tp
		rec partitionRecord
		f   *fetcher
	}
	var items []item
	for topic, ts := range rt.spec.Topics {
		for idx, rec := range ts.Partitions {
			it := item{tp{topic, idx}, *rec, rt.fetchers[tp{topic, idx}]}
			if ts.SourceDeletedAtMs > 0 && it.rec.Reason == "" {
				it.rec.Reason = "source topic deleted (found " + time.UnixMilli(ts.SourceDeletedAtMs).UTC().Format(time.RFC3339) +
					"): mirror stopped"
			}
			items = append(items, it)
		}
	}
	rt.mu.Unlock()
	now := time.Now().UnixMilli()
	for _, it := range items {
		ps := PartitionStatus{Topic: it.k.topic, Partition: it.k.partition, State: it.rec.State,
			LastMirroredOffset: it.rec.LastMirroredOffset, BarrierOffset: it.rec.BarrierOffset, Reason: it.rec.Reason,
			LostAtFailover: it.rec.LostAtFailover, AbortedAtFailover: it.rec.AbortedTxns, Retries: it.rec.Retries, Retriable: it.rec.Retriable, Truncated: it.rec.Truncated,
			SourceHighWater: -1, SourceLastStable: -1, LocalLogEndOffset: -1, LocalHighWatermark: -1}
		if it.rec.State == Stopping || it.rec.State == Stopped {
			ps.FailoverMode = it.rec.FailoverMode
			if ps.FailoverMode == "" {
				ps.FailoverMode = FailoverTruncateToLSO
			}
		}
		if it.rec.State == Failed && it.rec.Retriable {
			ps.NextRetryAt = it.rec.RetryAt
		}
		if parts := m.local.Partitions(it.k.topic); int(it.k.partition) < len(parts) {
			o := parts[it.k.partition].Offsets()
			ps.LocalLogEndOffset, ps.LocalHighWatermark = o.LogEnd, o.HighWatermark
		}
		if f := it.f; f != nil {
			ps.SourceHighWater = f.sourceHW.Load()
			ps.SourceLastStable = f.sourceLSO.Load()
			if since := f.lsoWaitSince.Load(); since > 0 && it.rec.State == Mirroring {
				ps.WaitingForSourceLSOSince = since
			}
			ps.FetchErrors = f.fetchErrors.Load()
			// The last word from the source is an error: it is unreachable
			// (or refusing). An answer after the error clears the note.
			errAt, seenAt := f.lastErrAt.Load(), f.sourceSeenAt.Load()
			ps.SourceSeenAtMs = seenAt
			ps.SourceUnreachable = errAt > 0 && errAt >= seenAt
			if e := f.lastErr.Load(); e != nil && ps.SourceUnreachable {
				ps.LastError = *e
			}
			switch {
			case ps.SourceHighWater >= 0:
				// The last known lag (the source's HW when it last answered).
				ps.LagRecords = max(ps.SourceHighWater-ps.LocalLogEndOffset, 0)
			case it.rec.State.syncsOffsets():
				ps.LagRecords = -1 // unknown: the source never answered this fetcher
			}
			if ps.LagRecords != 0 || ps.SourceUnreachable {
				// Time since the mirror last knew it was caught up: it
				// grows while the source cannot be asked.
				ps.LagMillis = now - f.caughtUpAt.Load()
			}
		}
		st.Partitions = append(st.Partitions, ps)
	}
	sort.Slice(st.Partitions, func(i, j int) bool {
		a, b := st.Partitions[i], st.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return st, nil
}
