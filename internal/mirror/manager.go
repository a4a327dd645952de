// Package mirror runs cluster mirrors: per-partition fetchers that copy a
// source cluster's topics byte for byte with offsets kept, the persisted
// mirror state machine (PREPARING → MIRRORING ⇄ PAUSED → STOPPING →
// STOPPED, and FAILED), and the failover that writes the MIRROR_PID_RESET
// barrier. It writes to logs only through internal/partition.
package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/vfs"
)

// Local is what a mirror needs of the broker it runs in.
type Local interface {
	// Partitions returns a topic's partitions, nil when there is none.
	Partitions(topic string) []*partition.Partition
	// EnsureTopic creates the topic (with the source's id and configs) or
	// grows it to partitions, and returns its partitions.
	EnsureTopic(name string, partitions int32, configs map[string]string, id [16]byte) ([]*partition.Partition, error)
	// ClusterID is the local cluster's id.
	ClusterID() string
	// TopicConfigs returns a topic's overrides (false: no such topic).
	TopicConfigs(name string) (map[string]string, bool)
	// UpdateTopicConfigs sets and removes overrides of a topic, durably.
	UpdateTopicConfigs(name string, set map[string]string, remove []string) error
}

// Options tune the mirrors. The zero value is usable.
type Options struct {
	FS       vfs.FS
	Logger   *zap.Logger
	Registry prometheus.Registerer
	// FetchMaxWait, when set, is the default of mirror.fetch.wait.max.ms
	// (the long poll of a fetch; the setting's own default is 100ms, Kafka's
	// replica.fetch.wait.max.ms is 500ms). A partition that joins a broker
	// loop waits for the poll in flight, and a source serves one request per
	// connection at a time, so this bounds how long a new or resumed
	// partition waits before its first fetch.
	FetchMaxWait time.Duration
	// FetchMaxBytes bounds one fetch (default 8 MiB).
	FetchMaxBytes int32
	// MetadataInterval, when set, is the default of
	// mirror.metadata.refresh.interval.ms (how often a mirror looks at the
	// source's topics; the setting's own default is 30s).
	MetadataInterval time.Duration
	// Groups, when set, receives the source's committed group offsets
	// every OffsetSyncInterval (default 10s).
	Groups             GroupOffsets
	OffsetSyncInterval time.Duration
	// ShareGroups, when set, receives the source's share groups' start
	// offsets on the same interval (groups_share.go).
	ShareGroups ShareOffsets
	// ACLs, when set, is the local authorizer the source's topic ACLs are
	// synced to (aclsync.go); nil: the broker has none, nothing is synced.
	ACLs ACLStore
	// SourceDialer, when set, returns the dial function for a mirror's
	// connections to its source (the broker's fault injection wraps them
	// to pause, slow or cut the link); nil dials directly.
	SourceDialer func(mirror string) func(ctx context.Context, network, host string) (net.Conn, error)
	// StateTopic is where the mirrors' state is kept: the broker's
	// __mirror_state (statetopic.go); nil: the Manager opens and closes
	// the partition __mirror_state-0 of its data directory itself.
	StateTopic StateTopic

	// private are the test seams (knobs, hooks.go): unexported, so no
	// config file, flag or API sets them; the zero value is production.
	// A test outside this package reaches them only through WithTestHooks.
	private knobs
}

// StopStep names the steps of STOPPING, in order.
type StopStep string

const (
	StepStopFetcher StopStep = "stop-fetcher"
	StepTruncate    StopStep = "truncate-to-lso"
	StepClamp       StopStep = "clamp-group-offsets"
	StepBarrier     StopStep = "write-barrier"
	StepAbort       StopStep = "abort-open-transaction"
	StepStopped     StopStep = "mark-stopped"
)

// Errors returned to the admin API.
var (
	ErrExists     = errors.New("mirror: already exists")
	ErrNotFound   = errors.New("mirror: not found")
	ErrBadRequest = errors.New("mirror: bad request")
	ErrActive     = errors.New("mirror: has active partitions")
)

var validName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,200}$`)

// Manager owns every mirror of one broker.
type Manager struct {
	local   Local
	dataDir string
	opts    Options
	logger  *zap.Logger
	metrics *metrics

	// Locks, in the order they are taken (a lock is never taken while
	// one after it in this list is held):
	//
	//	liveMirror.aclMu   one ACL sync of a mirror at a time
	//	stopMu             one failover's steps at a time
	//	groupSyncMu        offset sync commits vs STOPPING's clamp
	//	liveMirror.mu      one mirror's records and runtime
	//	mu                 the registry (mirrors, closed)
	//	storeMu            the persisted state (store, saved)
	//
	// Work on one mirror (its fetchers' records, its saves, its describe)
	// holds only that mirror's lock, so it does not wait for another
	// mirror's: two mirror locks are never held at once, and code that
	// looks at every mirror (TopicMirror, ownerOf, List, metrics) takes
	// the registry for the list, then each mirror's lock in turn. mu and
	// storeMu are held briefly and never across network I/O; storeMu is
	// held across a save's fsync, which every mirror's save shares (one
	// state log), but a mirror's describe or fetcher does not wait for it
	// unless that mirror is the one saving.
	mu      sync.Mutex
	mirrors map[string]*liveMirror
	closed  bool

	storeMu sync.Mutex
	store   *store // the persisted state (statelog.go); nil once closed
	// saved is each mirror's spec as last persisted: a copy no one
	// changes, so a save composes the document from the other mirrors'
	// copies without taking their locks.
	saved map[string]*mirrorSpec

	// groupSyncMu orders the offset sync's local commits with STOPPING's
	// clamp of group offsets (taken before a mirror's lock; never across
	// network I/O).
	groupSyncMu sync.Mutex
	// stopMu runs one failover's steps at a time (taken before
	// groupSyncMu and a mirror's lock); stops counts the failovers running in the
	// background (BeginStop), which Close waits for.
	stopMu sync.Mutex
	stops  sync.WaitGroup

	knobs knobs      // test seams (hooks.go); zero in production
	oneMu sync.Mutex // every mirror's lock under knobs.oneLock
}

// liveMirror is a mirror's live part.
type liveMirror struct {
	// mu is the mirror's lock (Manager lists the order): it guards spec
	// (records, topics, settings as stored) and every field below said to
	// be guarded by it. Never held across network I/O; held across a save
	// of the mirror's state, so a change is persisted before it is acted
	// on and before anything else of the mirror sees it.
	mu   *sync.Mutex // the mirror's own (knobs.oneLock: one shared by all mirrors)
	spec *mirrorSpec
	// gone is set (under mu) once the mirror is deleted: nothing of it is
	// saved or started after.
	gone bool
	// aclMu runs one ACL sync at a time (taken before mu); aclSync is the
	// last one's status, guarded by mu.
	aclMu   sync.Mutex
	aclSync *ACLSyncStatus
	// cfg is spec.Config resolved (settings.go); replaced, never changed
	// in place, when the settings are altered.
	cfg      atomic.Pointer[Settings]
	src      *source
	fetchers map[tp]*fetcher
	// closing are fetchers told to stop without being waited for (by
	// failIdentity, which one of them may have called): STOPPING waits
	// for those of its partitions, shutdownRuntime for all. Guarded by
	// Manager.mu.
	closing []*fetcher
	// groupSyncedAt is when each group's offsets were last synced
	// (unix ms), guarded by mu; shown by Plan.
	groupSyncedAt map[string]int64
	// groupsSkipped are the source groups the last syncs left alone
	// because they are active here, so each is logged once when it
	// starts being skipped (groups.go).
	groupsSkipped map[string]bool
	// retries are the armed retry timers of partitions FAILED for a
	// retriable reason (retry.go), guarded by mu.
	retries map[tp]*time.Timer
	// missing counts the refreshes in a row that found a mirrored topic
	// gone at the source; skipped holds the source topics the filters
	// select that auto-creation left alone, with why (both guarded by
	// Manager.mu).
	missing map[string]int
	skipped map[string]string
	// throttle bounds the bytes/s every broker loop of the mirror fetches
	// (mirror.replication.throttled.rate, throttle.go); it outlives the
	// source client, which a source-config alter replaces.
	throttle throttle
	stop     chan struct{}
	done     chan struct{}
}

type tp struct {
	topic     string
	partition int32
}

// Open loads persisted mirrors, makes their partitions read-only again,
// resumes fetchers, and finishes any STOPPING interrupted by a crash
// (never writing a second barrier).
func Open(local Local, dataDir string, opts Options) (*Manager, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.private.hooks == nil {
		opts.private.hooks = NoTestHooks{}
	}
	if opts.FetchMaxBytes <= 0 {
		opts.FetchMaxBytes = 8 << 20
	}
	if opts.OffsetSyncInterval <= 0 {
		opts.OffsetSyncInterval = 10 * time.Second
	}
	st, d, notes, err := openStore(opts.FS, dataDir, opts.StateTopic)
	if err != nil {
		return nil, err
	}
	m := &Manager{local: local, dataDir: dataDir, opts: opts, logger: opts.Logger.Named("mirror"),
		store: st, saved: map[string]*mirrorSpec{}, mirrors: map[string]*liveMirror{}, knobs: opts.private}
	for _, spec := range d.Mirrors {
		m.saved[spec.Name] = cloneSpec(spec)
	}
	for _, n := range notes {
		m.logger.Warn(n)
	}
	m.metrics = newMetrics(m, opts.Registry)
	for _, spec := range d.Mirrors {
		if err := m.resume(spec); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

func (m *Manager) resume(spec *mirrorSpec) error {
	rt, err := m.newRuntime(spec)
	if err != nil {
		return fmt.Errorf("mirror %s in %s: %w", spec.Name, StateTopicName, err)
	}
	m.mu.Lock()
	m.mirrors[spec.Name] = rt
	m.mu.Unlock()
	// The core's recover for every record: the partition's mode from its
	// state, its fetcher, its retry; a STOPPING one goes on with its
	// failover (stopPartitions takes it from the first step not done).
	var stopping []tp
	for topic, ts := range spec.Topics {
		parts := m.local.Partitions(topic)
		for idx, rec := range ts.Partitions {
			if int(idx) >= len(parts) {
				return fmt.Errorf("mirror %s: %s-%d in %s but not on disk", spec.Name, topic, idx, StateTopicName)
			}
			p, k := parts[idx], tp{topic, idx}
			_, effs, _ := step(*rec, coreEvent{Kind: EvRecover})
			for _, e := range effs {
				switch e.Kind {
				case effRaiseEpoch:
					p.RaiseLeaderEpoch(e.Epoch)
				case effSetMode:
					applyMode(p, e.Mode, spec.Name)
				case effStartFetcher:
					m.startFetcher(rt, topic, idx, p, e.Paused)
				case effArmRetry:
					rt.mu.Lock()
					m.scheduleRetryLocked(rt, k, time.Until(time.UnixMilli(e.At)))
					rt.mu.Unlock()
				case effFindLSO, effClampGroups:
					stopping = append(stopping, k)
				}
			}
		}
	}
	if len(stopping) > 0 {
		m.logger.Info("resuming interrupted failover", zap.String("mirror", spec.Name), zap.Int("partitions", len(stopping)))
		if err := m.stopPartitions(rt, stopping); err != nil {
			return err
		}
	}
	m.startRefresher(rt)
	return nil
}

func (m *Manager) newRuntime(spec *mirrorSpec) (*liveMirror, error) {
	s, err := resolveSettings(spec.Config, m.defaultOverrides())
	if err != nil {
		return nil, err
	}
	rt := &liveMirror{mu: new(sync.Mutex), spec: spec, fetchers: map[tp]*fetcher{}, stop: make(chan struct{}), done: make(chan struct{})}
	if m.knobs.oneLock {
		rt.mu = &m.oneMu
	}
	rt.cfg.Store(&s)
	return rt, nil
}

// settings is the mirror's current settings (never nil).
func (rt *liveMirror) settings() *Settings { return rt.cfg.Load() }

// defaultOverrides are the Options that change settings' defaults.
func (m *Manager) defaultOverrides() defaultOverrides {
	o := defaultOverrides{}
	if m.opts.FetchMaxWait > 0 {
		o[SettingFetchWaitMaxMs] = fmt.Sprint(m.opts.FetchMaxWait.Milliseconds())
	}
	if m.opts.MetadataInterval > 0 {
		o[SettingMetadataRefreshMs] = fmt.Sprint(max(m.opts.MetadataInterval.Milliseconds(), 1))
	}
	return o
}

// Settings returns a mirror's settings, resolved with their defaults.
func (m *Manager) Settings(name string) (Settings, error) {
	rt, err := m.runtime(name)
	if err != nil {
		return Settings{}, err
	}
	return *rt.settings(), nil
}

// errStopped is source's answer once the mirror's runtime is shutting
// down (the broker closing, or the mirror deleted).
var errStopped = errors.New("mirror: shutting down")

// source returns the mirror's source client, creating it on first use.
func (m *Manager) source(rt *liveMirror) (*source, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.src != nil {
		return rt.src, nil
	}
	select {
	case <-rt.stop:
		// shutdownRuntime has taken rt.src to close it: a client made
		// now (by the refresher or a fetcher it has not waited for yet)
		// would never be closed.
		return nil, errStopped
	default:
	}
	src, err := newSource(m.sourceConfig(rt.spec))
	if err != nil {
		return nil, err
	}
	src.settings, src.throttle, src.noFetchEpoch = rt.settings, &rt.throttle, m.knobs.noFetchEpoch
	rt.src = src
	return src, nil
}

// sourceConfig is what a mirror's source client is made from: the spec's
// addresses and client id, and the broker's dialer.
func (m *Manager) sourceConfig(spec *mirrorSpec) sourceConfig {
	cfg := sourceConfig{Addrs: spec.Source, ClientID: spec.ClientID, Settings: spec.SourceConfig}
	if m.opts.SourceDialer != nil {
		cfg.Dial = m.opts.SourceDialer(spec.Name)
	}
	return cfg
}

// saveLocked persists rt's mirror as it is now, fsynced before it
// returns; rt.mu held (it takes storeMu). The other mirrors are saved as
// they were last persisted (their copies in saved), so no other mirror's
// lock is taken.
func (m *Manager) saveLocked(rt *liveMirror) error {
	return m.saveWith(rt, func(s *store, d *doc) error { return s.saveDoc(d) })
}

// saveSourceConfigsLocked persists the mirrors' source settings with rt's
// as they are now, fsynced before it returns; rt.mu held.
func (m *Manager) saveSourceConfigsLocked(rt *liveMirror) error {
	return m.saveWith(rt, func(s *store, d *doc) error { return s.saveSources(d) })
}

func (m *Manager) saveWith(rt *liveMirror, save func(*store, *doc) error) error {
	if rt.gone {
		return errStopped
	}
	c := cloneSpec(rt.spec)
	m.storeMu.Lock()
	defer m.storeMu.Unlock()
	if m.store == nil {
		return errStopped
	}
	if h := m.knobs.beforeSave; h != nil {
		h(c.Name)
	}
	was, ok := m.saved[c.Name]
	m.saved[c.Name] = c
	if err := save(m.store, m.savedDocLocked()); err != nil {
		if ok {
			m.saved[c.Name] = was
		} else {
			delete(m.saved, c.Name)
		}
		return err
	}
	return nil
}

// savedDocLocked is the document of the saved copies; storeMu held.
func (m *Manager) savedDocLocked() *doc {
	d := &doc{Version: mirrorsVersion, Mirrors: make([]*mirrorSpec, 0, len(m.saved))}
	for _, s := range m.saved {
		d.Mirrors = append(d.Mirrors, s)
	}
	return d
}

// cloneSpec copies a spec deeply enough that changes to the original
// (records changed in place, maps written) do not reach the copy.
func cloneSpec(s *mirrorSpec) *mirrorSpec {
	c := *s
	c.Source = slices.Clone(s.Source)
	c.Config = maps.Clone(s.Config)
	c.GroupsInclude, c.GroupsExclude = slices.Clone(s.GroupsInclude), slices.Clone(s.GroupsExclude)
	c.SourceConfig = maps.Clone(s.SourceConfig)
	c.SyncedACLs = slices.Clone(s.SyncedACLs)
	c.Topics = make(map[string]*topicSpec, len(s.Topics))
	for name, ts := range s.Topics {
		t := *ts
		t.SyncedConfigs = maps.Clone(ts.SyncedConfigs)
		t.Partitions = make(map[int32]*partitionRecord, len(ts.Partitions))
		for idx, r := range ts.Partitions {
			rc := *r // pointer fields are replaced, never changed in place
			t.Partitions[idx] = &rc
		}
		c.Topics[name] = &t
	}
	return &c
}

// CreateOptions are a mirror's optional settings.
type CreateOptions struct {
	ClientID string
	// Config is the mirror's settings by name (mirror.topics.include, …:
	// settings.go); unknown names and bad values are refused.
	Config map[string]string
	// GroupsInclude and GroupsExclude are mirror.groups.include and
	// mirror.groups.exclude as lists (the API before the settings);
	// giving both a list and the setting is refused.
	GroupsInclude, GroupsExclude []string
	// CheckSource makes Create connect to the source first (ApiVersions,
	// then Metadata for its cluster id) and refuse a source that does not
	// answer. The admin API sets it unless asked not to; static mirrors
	// from the config file do not (their source may start later).
	CheckSource bool
	// SourceConfig is the source client's security settings, by Kafka's
	// client names (see security.go); checked before the mirror is made.
	SourceConfig map[string]string
}

// checkTimeout bounds the source check at create.
const checkTimeout = 15 * time.Second

// Create defines a mirror.
func (m *Manager) Create(name string, sources []string, clientID string) error {
	return m.CreateWith(name, sources, CreateOptions{ClientID: clientID})
}

// CreateWith defines a mirror with options.
func (m *Manager) CreateWith(name string, sources []string, co CreateOptions) error {
	config, err := createSettings(co)
	if err != nil {
		return err
	}
	clientID := co.ClientID
	if !validName.MatchString(name) {
		return fmt.Errorf("%w: mirror name %q", ErrBadRequest, name)
	}
	if len(sources) == 0 {
		return fmt.Errorf("%w: a source bootstrap address is required", ErrBadRequest)
	}
	settings := cleanSourceConfig(co.SourceConfig)
	if _, err := parseSourceConfig(settings); err != nil {
		return err
	}
	spec := &mirrorSpec{Name: name, Source: sources, ClientID: clientID, Topics: map[string]*topicSpec{},
		Config: config, SourceConfig: settings}
	if co.CheckSource {
		if _, err := m.runtime(name); err == nil {
			return fmt.Errorf("%w: %s", ErrExists, name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
		clusterID, err := checkSource(ctx, m.sourceConfig(spec))
		cancel()
		if err != nil {
			return err
		}
		spec.SourceClusterID = clusterID
	}
	rt, err := m.newRuntime(spec)
	if err != nil { // checked by createSettings: not reached
		return err
	}
	// The registry is held across the saves (mu before storeMu), so a
	// second create of the name waits and finds it. rt is no one else's
	// until it is in the registry: its lock is not needed.
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mirrors[name]; ok {
		return fmt.Errorf("%w: %s", ErrExists, name)
	}
	// The settings first: a mirror in the state always has them.
	err = m.saveSourceConfigsLocked(rt)
	if err == nil {
		err = m.saveLocked(rt)
	}
	if err != nil {
		m.storeMu.Lock()
		delete(m.saved, name)
		m.storeMu.Unlock()
		return err
	}
	m.mirrors[name] = rt
	m.startRefresher(rt)
	return nil
}

// createSettings is a new mirror's Config from its options, checked.
func createSettings(co CreateOptions) (map[string]string, error) {
	config := cleanSettings(co.Config)
	for _, l := range []struct {
		name  string
		items []string
	}{{SettingGroupsInclude, co.GroupsInclude}, {SettingGroupsExclude, co.GroupsExclude}} {
		if len(l.items) == 0 {
			continue
		}
		if _, ok := config[l.name]; ok {
			return nil, fmt.Errorf("%w: %s given twice (as a setting and as a list)", ErrBadRequest, l.name)
		}
		if config == nil {
			config = map[string]string{}
		}
		config[l.name] = joinList(l.items)
	}
	if _, err := ResolveSettings(config); err != nil {
		return nil, err
	}
	return config, nil
}

// Delete removes a mirror whose partitions are all stopped (or failed).
func (m *Manager) Delete(name string) error {
	rt, err := m.runtime(name)
	if err != nil {
		return err
	}
	rt.mu.Lock()
	if rt.gone {
		rt.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	for topic, ts := range rt.spec.Topics {
		for idx, rec := range ts.Partitions {
			if rec.State.active() {
				rt.mu.Unlock()
				return fmt.Errorf("%w: %s-%d is %s; stop the mirror first", ErrActive, topic, idx, rec.State)
			}
		}
	}
	// The partitions to make writable again, listed under the lock: a
	// start that began before the delete writes these maps under rt.mu
	// (until it sees the mirror gone), so they are not read after Unlock.
	var ks []tp
	for topic, ts := range rt.spec.Topics {
		for idx := range ts.Partitions {
			ks = append(ks, tp{topic, idx})
		}
	}
	// gone first: from here no save of the mirror puts it back in the
	// state, and no start records partitions or starts fetchers on it.
	rt.gone = true
	rt.mu.Unlock()
	m.mu.Lock()
	if m.mirrors[name] == rt {
		delete(m.mirrors, name)
	}
	m.mu.Unlock()
	m.storeMu.Lock()
	delete(m.saved, name)
	if m.store == nil {
		err = errStopped
	} else if err = m.store.saveDoc(m.savedDocLocked()); err == nil {
		err = m.store.saveSources(m.savedDocLocked())
	}
	m.storeMu.Unlock()
	m.shutdownRuntime(rt)
	// A failed partition stays read-only until its mirror is gone.
	for _, k := range ks {
		if parts := m.local.Partitions(k.topic); int(k.partition) < len(parts) {
			if mode, owner := parts[k.partition].Mode(); mode == partition.Mirrored && owner == name {
				parts[k.partition].SetMode(partition.Writable, "")
			}
		}
	}
	return err
}

// goneLocked reports whether rt was deleted or shut down (rt.mu held): a
// start that looked its mirror up before then must not record partitions
// or start fetchers on it (nothing would stop them, and the partitions
// would stay read-only under a mirror that no longer exists).
func (m *Manager) goneLocked(rt *liveMirror) bool {
	if rt.gone {
		return true
	}
	select {
	case <-rt.stop:
		return true
	default:
		return false
	}
}

func (m *Manager) runtime(name string) (*liveMirror, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rt, ok := m.mirrors[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	return rt, nil
}

// Names lists the mirrors.
func (m *Manager) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.mirrors))
	for n := range m.mirrors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ownerOf returns the mirror actively mirroring topic, if any. No
// mirror's lock may be held: it takes each in turn.
func (m *Manager) ownerOf(topic string) string {
	for _, rt := range m.live() {
		rt.mu.Lock()
		ts := rt.spec.Topics[topic]
		active := false
		if ts != nil {
			for _, rec := range ts.Partitions {
				active = active || rec.State.active()
			}
		}
		rt.mu.Unlock()
		if active {
			return rt.spec.Name
		}
	}
	return ""
}

// live lists the mirrors in the registry, sorted by name (their locks
// are taken after, one at a time).
func (m *Manager) live() []*liveMirror {
	m.mu.Lock()
	out := make([]*liveMirror, 0, len(m.mirrors))
	for _, rt := range m.mirrors {
		out = append(out, rt)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].spec.Name < out[j].spec.Name })
	return out
}

// partitionsOf lists a mirror's partitions of the given topics (all topics
// when none are named) that are in one of the states.
func (m *Manager) partitionsOf(rt *liveMirror, topics []string, states ...State) ([]tp, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(topics) == 0 {
		for t := range rt.spec.Topics {
			topics = append(topics, t)
		}
	}
	var out []tp
	for _, topic := range topics {
		ts, ok := rt.spec.Topics[topic]
		if !ok {
			return nil, fmt.Errorf("%w: mirror %s has no topic %s", ErrNotFound, rt.spec.Name, topic)
		}
		for idx, rec := range ts.Partitions {
			for _, s := range states {
				if rec.State == s {
					out = append(out, tp{topic, idx})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].partition < out[j].partition
	})
	return out, nil
}

// setRecord updates one partition's persisted record: the change is kept
// in memory only once it is saved (a failed save puts the record back and
// answers the error).
func (m *Manager) setRecord(rt *liveMirror, k tp, update func(*partitionRecord)) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	ts := rt.spec.Topics[k.topic]
	if ts == nil || ts.Partitions[k.partition] == nil {
		return fmt.Errorf("%w: %s-%d of mirror %s", ErrNotFound, k.topic, k.partition, rt.spec.Name)
	}
	snap := snapshotLocked(rt, []tp{k})
	update(ts.Partitions[k.partition])
	return m.saveOrRestoreLocked(rt, snap)
}

// recordSnapshot is partition records as they were before a change, to
// put back when the change cannot be saved: what a partition's record says
// in memory is what the state log says (the state changes only once
// persisted; before, a failed save left the change in memory, where
// describe, stop and the fetchers acted on a state a restart would not
// find).
type recordSnapshot struct {
	recs []*partitionRecord
	was  []partitionRecord
	spec *mirrorSpec
	auto bool
}

// snapshotLocked copies the records of ks (and the mirror's AutoTopics);
// rt.mu held. A record's pointer fields are replaced, never changed in
// place, so a shallow copy is the record.
func snapshotLocked(rt *liveMirror, ks []tp) recordSnapshot {
	s := recordSnapshot{spec: rt.spec, auto: rt.spec.AutoTopics}
	for _, k := range ks {
		if ts := rt.spec.Topics[k.topic]; ts != nil {
			if r := ts.Partitions[k.partition]; r != nil {
				s.recs = append(s.recs, r)
				s.was = append(s.was, *r)
			}
		}
	}
	return s
}

func (s recordSnapshot) restore() {
	for i, r := range s.recs {
		*r = s.was[i]
	}
	s.spec.AutoTopics = s.auto
}

// saveOrRestoreLocked saves rt's mirror; when the save fails it puts
// the snapshot back and answers the error. rt.mu held. A save that failed
// on a write or fsync may have left its record in the file: the state as
// restored is saved again at once (a fault that passed), else by the next
// save or Close; a crash before either may find the refused change, as a
// request answered with an error may or may not have been applied.
func (m *Manager) saveOrRestoreLocked(rt *liveMirror, s recordSnapshot) error {
	err := m.saveLocked(rt)
	if err != nil {
		s.restore()
		if m.stateUnknown() {
			_ = m.saveLocked(rt)
		}
	}
	return err
}

// stateUnknown reports whether the last save failed on a write or fsync.
func (m *Manager) stateUnknown() bool {
	m.storeMu.Lock()
	defer m.storeMu.Unlock()
	return m.store != nil && m.store.stateUnknown()
}

// Close stops every fetcher and refresher and waits for them. Mirror
// state stays as persisted: a restart resumes it.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	rts := make([]*liveMirror, 0, len(m.mirrors))
	for _, rt := range m.mirrors {
		rts = append(rts, rt)
	}
	m.mu.Unlock()
	// A failover begun runs to its end (its steps touch only local logs):
	// not finishing it would leave it for the next start-up.
	m.stops.Wait()
	for _, rt := range rts {
		m.shutdownRuntime(rt)
	}
	m.storeMu.Lock()
	if m.store.stateUnknown() {
		// The last save failed: write the state as last saved (a failed
		// save's change was put back in memory too).
		if err := m.store.saveDoc(m.savedDocLocked()); err != nil {
			m.logger.Warn("saving the mirror state at close", zap.Error(err))
		}
	}
	st := m.store
	m.store = nil
	m.storeMu.Unlock()
	if err := st.close(); err != nil {
		m.logger.Warn("closing the mirror state", zap.Error(err))
	}
}

func (m *Manager) shutdownRuntime(rt *liveMirror) {
	rt.mu.Lock()
	select {
	case <-rt.stop:
	default:
		close(rt.stop)
	}
	stopRetriesLocked(rt)
	fetchers := make([]*fetcher, 0, len(rt.fetchers)+len(rt.closing))
	for k, f := range rt.fetchers {
		fetchers = append(fetchers, f)
		delete(rt.fetchers, k)
	}
	fetchers = append(fetchers, rt.closing...)
	rt.closing = nil
	src := rt.src
	rt.src = nil
	rt.mu.Unlock()
	for _, f := range fetchers {
		f.close()
	}
	<-rt.done
	if src != nil {
		src.close()
	}
}
