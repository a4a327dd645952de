package fault

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// ErrNotFound is Clear's answer for an unknown id.
var ErrNotFound = errors.New("fault: not found")

// Registry holds a broker's faults. The zero value is not usable; a nil
// *Registry is a registry with faults disabled: Active is false, and the
// request path pays one nil check.
type Registry struct {
	// active counts faults that can still fire: the request path's only
	// cost when none is set is loading it.
	active atomic.Int32

	mu      sync.Mutex // guards everything below
	logger  *zap.Logger
	nextID  int64
	faults  []*entry // in the order set: the order they are evaluated in
	changed chan struct{}
	// throttles' schedules, per mirror: when the next byte may be read.
	linkNext map[string]time.Time
}

// entry is a fault's live state.
type entry struct {
	id      string
	spec    Spec
	rng     *mrand.Rand // nil unless probabilistic
	matched int64
	fired   int64
	active  bool
	setAt   time.Time
}

// NewRegistry returns an empty registry logging to logger.
func NewRegistry(logger *zap.Logger) *Registry {
	if logger == nil {
		logger = zap.NewNop()
	}
	return &Registry{logger: logger, changed: make(chan struct{}), linkNext: map[string]time.Time{}}
}

// SetLogger sends the registry's logs to l (a registry outlives the
// brokers of a test cluster that restarts).
func (r *Registry) SetLogger(l *zap.Logger) {
	if r == nil || l == nil {
		return
	}
	r.mu.Lock()
	r.logger = l
	r.mu.Unlock()
}

// Active reports whether any fault can fire; false on a nil registry.
func (r *Registry) Active() bool { return r != nil && r.active.Load() > 0 }

// Set adds a fault and returns its status (with its id, and the seed a
// probabilistic fault drew from when none was given).
func (r *Registry) Set(s Spec) (Status, error) {
	if err := s.Validate(); err != nil {
		return Status{}, err
	}
	if s.Nth == 0 && !s.Kind.IsLink() {
		s.Nth = 1
	}
	e := &entry{spec: s, active: true, setAt: time.Now()}
	if s.Probability > 0 {
		if e.spec.Seed == 0 {
			var b [8]byte
			rand.Read(b[:])
			e.spec.Seed = binary.LittleEndian.Uint64(b[:]) | 1
		}
		e.rng = mrand.New(mrand.NewPCG(e.spec.Seed, 0))
	}
	r.mu.Lock()
	r.nextID++
	e.id = strconv.FormatInt(r.nextID, 10)
	r.faults = append(r.faults, e)
	r.active.Add(1)
	r.changedLocked()
	st := e.status()
	logger := r.logger
	r.mu.Unlock()
	logger.Warn("fault set", zap.String("fault_id", st.ID), zap.String("fault", st.Describe()),
		zap.Int64("nth", s.Nth), zap.Int64("count", s.Count), zap.Float64("probability", s.Probability), zap.Uint64("seed", e.spec.Seed))
	return st, nil
}

// Clear removes a fault.
func (r *Registry) Clear(id string) error {
	r.mu.Lock()
	for i, e := range r.faults {
		if e.id == id {
			r.faults = append(r.faults[:i], r.faults[i+1:]...)
			r.deactivateLocked(e)
			r.changedLocked()
			st := e.status()
			logger := r.logger
			r.mu.Unlock()
			logger.Warn("fault cleared", zap.String("fault_id", id), zap.String("fault", st.Describe()),
				zap.Int64("matched", st.Matched), zap.Int64("fired", st.Fired))
			return nil
		}
	}
	r.mu.Unlock()
	return fmt.Errorf("%w: %s", ErrNotFound, id)
}

// ClearAll removes every fault and returns how many there were.
func (r *Registry) ClearAll() int {
	r.mu.Lock()
	n := len(r.faults)
	for _, e := range r.faults {
		r.deactivateLocked(e)
	}
	r.faults = nil
	r.changedLocked()
	logger := r.logger
	r.mu.Unlock()
	if n > 0 {
		logger.Warn("faults cleared", zap.Int("faults", n))
	}
	return n
}

// Get returns a fault's status.
func (r *Registry) Get(id string) (Status, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.faults {
		if e.id == id {
			return e.status(), true
		}
	}
	return Status{}, false
}

// List returns every fault set and not cleared (expired ones included,
// inactive), in the order set.
func (r *Registry) List() []Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Status, 0, len(r.faults))
	for _, e := range r.faults {
		out = append(out, e.status())
	}
	return out
}

func (e *entry) status() Status {
	return Status{ID: e.id, Spec: e.spec, Matched: e.matched, Fired: e.fired, Active: e.active, SetAt: e.setAt}
}

func (r *Registry) deactivateLocked(e *entry) {
	if e.active {
		e.active = false
		r.active.Add(-1)
	}
}

// changedLocked wakes everything waiting on a link fault to change.
func (r *Registry) changedLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
	clear(r.linkNext) // a throttle set later starts a fresh schedule
}

// Request describes a Kafka request to the registry.
type Request struct {
	APIKey int16
	// Names reports whether the request names the topic (and the
	// partition, when partition >= 0).
	Names func(topic string, partition int32) bool
}

// Fired is a fault that fired on a request: what the broker must do.
type Fired struct {
	ID        string
	Kind      Kind
	Topic     string
	Partition int32 // -1: every partition of Topic
	ErrorCode int16
	Latency   time.Duration
}

// Match evaluates every active request fault, in the order they were set,
// against one request, and returns those that fire. A fault matches when
// its API key (if any) is the request's and the request names its topic
// and partition (if any); a match counts toward Nth whether or not a
// probabilistic fault then fires.
func (r *Registry) Match(req Request) []Fired {
	if !r.Active() {
		return nil
	}
	var out []Fired
	var logs []Status
	r.mu.Lock()
	for _, e := range r.faults {
		s := &e.spec
		if !e.active || s.Kind.IsLink() {
			continue
		}
		key := s.APIKey
		if s.Kind == Storage {
			zero := int16(0)
			key = &zero
		}
		if key != nil && *key != req.APIKey {
			continue
		}
		part := int32(-1)
		if s.Partition != nil {
			part = *s.Partition
		}
		if s.Topic != "" && (req.Names == nil || !req.Names(s.Topic, part)) {
			continue
		}
		e.matched++
		if e.matched < s.Nth {
			continue
		}
		if e.rng != nil && e.rng.Float64() >= s.Probability {
			continue
		}
		e.fired++
		f := Fired{ID: e.id, Kind: s.Kind, Topic: s.Topic, Partition: part, ErrorCode: s.ErrorCode,
			Latency: time.Duration(s.LatencyMs) * time.Millisecond}
		if s.Kind == Storage {
			f.Kind, f.ErrorCode = Error, storageErrorCode
		}
		out = append(out, f)
		spent := s.Count > 0 && e.fired >= s.Count
		if spent {
			r.deactivateLocked(e)
		}
		if e.fired == 1 || spent {
			logs = append(logs, e.status())
		}
	}
	logger := r.logger
	r.mu.Unlock()
	for _, st := range logs {
		if st.Fired == 1 {
			logger.Info("fault fired", zap.String("fault_id", st.ID), zap.String("fault", st.Describe()),
				zap.Int64("matched", st.Matched), zap.Int16("api_key", req.APIKey))
		}
		if !st.Active {
			logger.Info("fault expired", zap.String("fault_id", st.ID), zap.String("fault", st.Describe()),
				zap.Int64("matched", st.Matched), zap.Int64("fired", st.Fired))
		}
	}
	return out
}

// storageErrorCode is KAFKA_STORAGE_ERROR.
const storageErrorCode = 56
