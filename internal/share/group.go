package share

import (
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TP is a share partition's topic (by id, as the share APIs name it)
// and partition.
type TP struct {
	Topic     [16]byte
	Partition int32
}

// TopicInfo is what the assignor knows of a topic.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// Store keeps share partitions' snapshots durably (the broker's
// __share_group_state, TopicStore, or a test's). Save must be durable
// when it returns.
type Store interface {
	Save(group string, tp TP, s Snapshot) error
	Delete(group string, tp TP) error
	Load() (map[string]map[TP]Snapshot, error)
}

// Options configure a Coordinator.
type Options struct {
	Now    func() time.Time
	Topics func() []TopicInfo // the topics now, for the assignor
	Store  Store              // nil: state kept in memory only
	// MaxSize is group.share.max.size.
	MaxSize int

	// private are the test seams (knobs.go): unexported, so no config
	// file, flag or API sets them; the zero value is production. Code
	// outside this package reaches them only through WithTestHooks.
	private knobs
}

// Coordinator holds every share group: members, assignments, share
// sessions and share partitions, behind one mutex.
type Coordinator struct {
	opt Options

	mu       sync.Mutex
	groups   map[string]*Group
	sessions map[sessionKey]*Session
	changed  chan struct{} // closed when records become available
	// conns are the connections whose close ends share sessions
	// (BindSession, ConnClosed).
	conns map[any]bool
}

// Group is one share group.
type Group struct {
	ID      string
	Epoch   int32 // group epoch
	AssignE int32 // the epoch the assignment was computed at
	Members map[string]*Member
	parts   map[TP]*Partition
	metaKey string // the subscribed topics' partition counts at the last assignment
}

// Member is one share group member.
type Member struct {
	ID, ClientID, ClientHost string
	Rack                     *string
	Epoch, prevEpoch         int32
	Topics                   []string // subscribed topic names, sorted
	Assigned                 map[[16]byte][]int32
	lastSeen                 time.Time
	sessionTimeout           time.Duration
}

// NewCoordinator opens the share groups, loading the stored snapshots.
func NewCoordinator(opt Options) (*Coordinator, error) {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.MaxSize <= 0 {
		opt.MaxSize = 200
	}
	c := &Coordinator{opt: opt, groups: map[string]*Group{}, sessions: map[sessionKey]*Session{}, changed: make(chan struct{})}
	if opt.Store != nil {
		loaded, err := opt.Store.Load()
		if err != nil {
			return nil, err
		}
		for id, parts := range loaded {
			g := c.getOrCreate(id)
			for tp, s := range parts {
				g.parts[tp] = Restore(Config{}, s)
			}
		}
	}
	return c, nil
}

// store is the store, nil when there is none or it is switched off
// (the NoStore test hook).
func (c *Coordinator) store() Store {
	if c.opt.private.hooks.NoStore {
		return nil
	}
	return c.opt.Store
}

func (c *Coordinator) getOrCreate(id string) *Group {
	g := c.groups[id]
	if g == nil {
		g = &Group{ID: id, Members: map[string]*Member{}, parts: map[TP]*Partition{}}
		c.groups[id] = g
	}
	return g
}

// Exists reports whether a share group of that id exists (members or
// share partition state).
func (c *Coordinator) Exists(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.groups[id]
	return ok
}

// Changed is closed when records become available again (released,
// expired, a member gone): waiting share fetches retry.
func (c *Coordinator) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

func (c *Coordinator) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// HeartbeatRequest is a ShareGroupHeartbeat.
type HeartbeatRequest struct {
	Group, MemberID      string
	MemberEpoch          int32
	Rack                 *string
	Topics               []string // nil: unchanged
	ClientID, ClientHost string
	SessionTimeout       time.Duration
	HeartbeatIntervalMs  int32
}

// HeartbeatResult is its answer.
type HeartbeatResult struct {
	Err                 *kerr.Error
	MemberEpoch         int32
	HeartbeatIntervalMs int32
	// Assignment is set when the member must be told it (a full
	// request or a change).
	Assignment map[[16]byte][]int32
	HasAssign  bool
}

// Heartbeat joins (epoch 0), heartbeats or leaves (-1) a share group
// (Kafka's GroupMetadataManager.shareGroupHeartbeat).
func (c *Coordinator) Heartbeat(req HeartbeatRequest) HeartbeatResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opt.Now()
	res := HeartbeatResult{HeartbeatIntervalMs: req.HeartbeatIntervalMs}
	if req.MemberID == "" || len(req.MemberID) > 36 && req.MemberEpoch == 0 {
		res.Err = kerr.InvalidRequest
		return res
	}
	g := c.groups[req.Group]
	switch {
	case req.MemberEpoch == -1:
		if g == nil || g.Members[req.MemberID] == nil {
			res.Err = kerr.UnknownMemberID
			return res
		}
		c.removeMemberLocked(g, req.MemberID)
		res.MemberEpoch = -1
		return res
	case req.MemberEpoch < -1:
		res.Err = kerr.InvalidRequest
		return res
	case req.MemberEpoch > 0:
		if g == nil {
			res.Err = kerr.GroupIDNotFound
			return res
		}
		if g.Members[req.MemberID] == nil {
			res.Err = kerr.UnknownMemberID
			return res
		}
	case req.MemberEpoch == 0 && len(req.Topics) == 0 && (g == nil || g.Members[req.MemberID] == nil):
		res.Err = kerr.InvalidRequest
		return res
	}
	if g == nil {
		g = c.getOrCreate(req.Group)
	}
	m := g.Members[req.MemberID]
	if m == nil {
		if len(g.Members) >= c.opt.MaxSize {
			res.Err = kerr.GroupMaxSizeReached
			return res
		}
		m = &Member{ID: req.MemberID, Assigned: map[[16]byte][]int32{}}
		g.Members[m.ID] = m // its subscription (below) moves the group epoch
	} else if req.MemberEpoch != 0 && req.MemberEpoch != m.Epoch && req.MemberEpoch != m.prevEpoch {
		res.Err = kerr.FencedMemberEpoch
		return res
	}
	m.ClientID, m.ClientHost, m.lastSeen = req.ClientID, req.ClientHost, now
	if req.SessionTimeout > 0 {
		m.sessionTimeout = req.SessionTimeout
	}
	if req.Rack != nil {
		m.Rack = req.Rack
	}
	if req.Topics != nil {
		t := slices.Clone(req.Topics)
		sort.Strings(t)
		t = slices.Compact(t)
		if !slices.Equal(t, m.Topics) {
			m.Topics = t
			g.Epoch++
		}
	}
	c.maybeAssignLocked(g)
	before := m.Epoch
	if m.Epoch != g.Epoch {
		m.prevEpoch, m.Epoch = m.Epoch, g.Epoch
	}
	res.MemberEpoch = m.Epoch
	if req.Topics != nil || req.MemberEpoch == 0 || m.Epoch != before {
		res.Assignment, res.HasAssign = cloneAssign(m.Assigned), true
	}
	return res
}

func cloneAssign(a map[[16]byte][]int32) map[[16]byte][]int32 {
	out := make(map[[16]byte][]int32, len(a))
	for k, v := range a {
		out[k] = slices.Clone(v)
	}
	return out
}

// maybeAssignLocked recomputes the assignment when the group epoch moved
// or a subscribed topic's partition count changed.
func (c *Coordinator) maybeAssignLocked(g *Group) {
	var topics []TopicInfo
	if c.opt.Topics != nil {
		topics = c.opt.Topics()
	}
	byName := map[string]TopicInfo{}
	for _, t := range topics {
		byName[t.Name] = t
	}
	subs := map[string]bool{}
	for _, m := range g.Members {
		for _, t := range m.Topics {
			subs[t] = true
		}
	}
	names := make([]string, 0, len(subs))
	for t := range subs {
		names = append(names, t)
	}
	sort.Strings(names)
	key := ""
	for _, n := range names {
		if t, ok := byName[n]; ok {
			key += n + "/" + strconv.Itoa(int(t.Partitions)) + ";"
		}
	}
	if g.AssignE == g.Epoch && key == g.metaKey {
		return
	}
	if key != g.metaKey && g.AssignE == g.Epoch {
		g.Epoch++
	}
	g.metaKey, g.AssignE = key, g.Epoch
	assignSimple(g, byName, names, !c.opt.private.noStickyAssign)
}

// removeMemberLocked drops a member (left or fenced): its share sessions
// close and its acquired records are released.
func (c *Coordinator) removeMemberLocked(g *Group, id string) {
	delete(g.Members, id)
	for k := range c.sessions {
		if k.group == g.ID && k.member == id {
			delete(c.sessions, k)
		}
	}
	released := 0
	for tp, p := range g.parts {
		if n := p.ReleaseMember(id); n > 0 {
			released += n
			_ = c.persistLocked(g.ID, tp, p)
		}
	}
	g.Epoch++
	c.maybeAssignLocked(g)
	if released > 0 {
		c.signalLocked()
	}
}

// Tick fences the members whose session timed out and expires
// acquisition locks; the broker calls it periodically.
func (c *Coordinator) Tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opt.Now()
	signal := false
	for _, g := range c.groups {
		for id, m := range g.Members {
			if m.sessionTimeout > 0 && now.Sub(m.lastSeen) > m.sessionTimeout {
				c.removeMemberLocked(g, id)
			}
		}
		if c.opt.private.hooks.NoLockExpiry {
			continue
		}
		for tp, p := range g.parts {
			if p.ExpireLocks(now) > 0 {
				signal = true
				_ = c.persistLocked(g.ID, tp, p)
			}
		}
	}
	if signal {
		c.signalLocked()
	}
}

// MemberIn reports whether member is in group (share fetches from a
// member the coordinator does not know are still served, as Kafka's
// broker does not ask the coordinator; this is for describe).
func (c *Coordinator) MemberIn(group, member string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	return g != nil && g.Members[member] != nil
}
