package mirror

import (
	"encoding/json"
	"fmt"
	"sort"
)

// State is a mirrored partition's place in the lifecycle. The strings are
// persisted in the state document: never rename them.
type State string

const (
	Preparing State = "PREPARING"
	Mirroring State = "MIRRORING"
	Paused    State = "PAUSED"
	Stopping  State = "STOPPING"
	Stopped   State = "STOPPED"
	Failed    State = "FAILED"
)

// active reports whether the partition is (or will be) fed by a fetcher and
// therefore read-only to clients.
func (s State) active() bool {
	return s == Preparing || s == Mirroring || s == Paused || s == Stopping
}

// syncsOffsets reports whether the source's group offsets are copied for
// a partition in this state.
func (s State) syncsOffsets() bool { return s == Mirroring || s == Paused }

// The state document is every mirror's definition and per-partition
// state, JSON, saved as one record of mirror-state.log (statelog.go) on
// every state change (before the upgrade, the whole file mirrors.json):
//
//	{"version":1,"mirrors":[{"name":…,"source":[…],"client_id":…,
//	  "source_cluster_id":…,"config":{"mirror.topics.include":"orders.*"},
//	  "topics":{"orders":{"topic_id":"<hex>",
//	  "partitions":{"0":{"state":"MIRRORING","last_mirrored_offset":-1,
//	  "barrier_offset":-1,"reason":""}}}}}]}
//
// Fetch progress is not here: the local log end is the resume point.
const mirrorsVersion = 1

type doc struct {
	Version int           `json:"version"`
	Mirrors []*mirrorSpec `json:"mirrors"`
}

type mirrorSpec struct {
	Name            string   `json:"name"`
	Source          []string `json:"source"`
	ClientID        string   `json:"client_id,omitempty"`
	SourceClusterID string   `json:"source_cluster_id,omitempty"`
	// Config is the mirror's settings by name (settings.go), only those
	// given: the others take their default when resolved.
	Config map[string]string `json:"config,omitempty"`
	// AutoTopics is set by `mirror start` without topics: the refresh
	// starts every source topic mirror.topics.include/exclude select.
	AutoTopics bool `json:"auto_topics,omitempty"`
	// GroupsInclude and GroupsExclude are how mirrors.json kept the group
	// filter before the settings: read, moved into Config by decodeDoc,
	// never written again.
	GroupsInclude []string              `json:"groups_include,omitempty"`
	GroupsExclude []string              `json:"groups_exclude,omitempty"`
	Topics        map[string]*topicSpec `json:"topics"`
	// SourceConfig is the source client's security settings (Kafka's
	// names). It holds secrets, so it is not in the state document but in
	// the owner-only mirror-sources.log (secrets.go).
	SourceConfig map[string]string `json:"-"`
	// SyncedACLs are the ACLs the mirror copied from the source and still
	// follows (aclsync.go).
	SyncedACLs []syncedACL `json:"synced_acls,omitempty"`
}

type topicSpec struct {
	TopicID    string                     `json:"topic_id,omitempty"`
	Partitions map[int32]*partitionRecord `json:"partitions"`
	// Pending is set before a start creates the local topic and cleared
	// once its partitions are recorded: a crash in between leaves a topic
	// the refresh starts again (the local topic is this mirror's).
	Pending bool `json:"pending,omitempty"`
	// SyncedConfigs are the overrides the config sync copied from the
	// source (discover.go), so that one the source drops is removed.
	SyncedConfigs map[string]string `json:"synced_configs,omitempty"`
	// SourceDeletedAtMs is when the source was found to have deleted the
	// topic (unix ms), which stopped its mirror; 0 otherwise.
	SourceDeletedAtMs int64 `json:"source_deleted_at_ms,omitempty"`
}

type partitionRecord struct {
	State State `json:"state"`
	// LastMirroredOffset is the log end after STOPPING truncated to the
	// LSO: the offset where this node's own history starts (the barrier's
	// offset). -1 until STOPPING persists it.
	LastMirroredOffset int64 `json:"last_mirrored_offset"`
	// BarrierOffset is where the barrier was written, -1 before.
	BarrierOffset int64 `json:"barrier_offset"`
	// LostAtFailover is how many offsets past the LSO STOPPING cut.
	LostAtFailover int64 `json:"lost_at_failover,omitempty"`
	// FailoverMode is the mode of the failover (mirror.failover.mode),
	// set when STOPPING begins: "" is truncate-to-lso.
	FailoverMode FailoverMode `json:"failover_mode,omitempty"`
	// AbortedTxns is how many transactions open in the local log the
	// failover aborts (abort-open-transactions): its ABORT markers are at
	// LastMirroredOffset and after, the barrier after them.
	AbortedTxns int64  `json:"aborted_transactions,omitempty"`
	Reason      string `json:"reason,omitempty"`
	// SecurityFailure marks a FAILED partition whose source refused the
	// mirror's credentials or certificate (or the other way round):
	// changing the source config restarts it (AlterSourceConfig).
	SecurityFailure bool `json:"security_failure,omitempty"`
	// Retriable marks a FAILED partition whose failure may pass (retry.go):
	// it is started again after a backoff; Retries counts those restarts
	// since the partition last mirrored, RetryAt (unix ms) is the next.
	Retriable bool  `json:"retriable,omitempty"`
	Retries   int   `json:"retries,omitempty"`
	RetryAt   int64 `json:"retry_at_ms,omitempty"`
	// FailStreak counts the retries since a fetch last succeeded: the
	// backoff doubles with it.
	FailStreak int `json:"fail_streak,omitempty"`
	// AllowTruncate is the start's permission (--allow-truncate) to cut
	// local data down to TruncateTo while the log still ends at
	// LocalLogEnd (failback.go); cleared once PREPARING is done.
	AllowTruncate *truncateApproval `json:"allow_truncate,omitempty"`
	// Truncated is what PREPARING last cut, for describe.
	Truncated *PartitionTruncation `json:"truncated,omitempty"`
	// SourceLeaderEpoch is the highest leader epoch the source answered
	// for the partition while it was mirrored: the partition's own leader
	// epoch is kept at or above it (KIP-1279's leader-epoch invariant),
	// also across a restart, which opens the log at its latest batch's.
	SourceLeaderEpoch int32 `json:"source_leader_epoch,omitempty"`
}

// truncateApproval bounds the truncation `mirror start --allow-truncate`
// allowed: what its report showed.
type truncateApproval struct {
	TruncateTo  int64 `json:"truncate_to"`
	LocalLogEnd int64 `json:"local_log_end_offset"`
}

// decodeDoc parses a state document read from file.
func decodeDoc(raw []byte, file string) (*doc, error) {
	var d doc
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("mirror: parse %s: %w", file, err)
	}
	if d.Version != mirrorsVersion {
		return nil, fmt.Errorf("mirror: %s version %d, want %d", file, d.Version, mirrorsVersion)
	}
	for _, m := range d.Mirrors {
		if m.Topics == nil {
			m.Topics = map[string]*topicSpec{}
		}
		migrateGroupLists(m)
	}
	return &d, nil
}

// encodeDoc is d as saved (mirrors sorted by name).
func encodeDoc(d *doc) ([]byte, error) {
	sort.Slice(d.Mirrors, func(i, j int) bool { return d.Mirrors[i].Name < d.Mirrors[j].Name })
	return json.Marshal(d)
}

// migrateGroupLists moves the group filter of a mirror saved before the
// settings existed into its Config (mirror.groups.include/exclude), unless
// Config already has them.
func migrateGroupLists(m *mirrorSpec) {
	for _, l := range []struct {
		name  string
		items *[]string
	}{{SettingGroupsInclude, &m.GroupsInclude}, {SettingGroupsExclude, &m.GroupsExclude}} {
		if len(*l.items) == 0 {
			continue
		}
		if _, ok := m.Config[l.name]; !ok {
			if m.Config == nil {
				m.Config = map[string]string{}
			}
			m.Config[l.name] = joinList(*l.items)
		}
		*l.items = nil
	}
}
