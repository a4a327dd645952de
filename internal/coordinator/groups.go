package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/vfs"
)

// GroupsOptions configure the group coordinator.
type GroupsOptions struct {
	FS     vfs.FS
	Dir    string // the data directory; the group log lives in it
	Config GroupConfig
	Logger *zap.Logger
	// Metrics receives group metrics; nil records none.
	Metrics *GroupMetrics
	// TickInterval is how often timers are checked (default 100ms).
	TickInterval time.Duration
	// ExpireInterval is how often offsets.retention.ms is applied
	// (default 1 minute).
	ExpireInterval time.Duration
	// CompactBytes: rewrite the group log once it has grown by this much
	// and doubled (default 4 MiB).
	CompactBytes int64
	// Topics returns the broker's topics (consumer groups resolve their
	// subscriptions against it); it must not call into Groups. nil: no
	// topics.
	Topics func() *TopicImage
	// OffsetsTopic, if set, is __consumer_offsets: the coordinator's
	// store of record, in Kafka's schemas (offsets_topic.go); a group
	// log in Dir is migrated into it (offsets_topic_store.go). nil: the
	// group log in Dir is the store (this package's tests).
	OffsetsTopic OffsetsTopic

	// private are the test seams (knobs.go): unexported, so no config
	// file, flag or API sets them; the zero value is production. Code
	// outside this package reaches them only through WithTestHooks.
	private knobs
}

// Groups is the group coordinator: the deterministic core (groupCore)
// behind one mutex, the group log, and the one goroutine that runs its
// timers. JoinGroup and SyncGroup block their caller (only that request)
// until the rebalance answers them.
type Groups struct {
	opts   GroupsOptions
	logger *zap.Logger

	// mu guards core, waiters and nextWaiter. Lock order: mu, then the
	// group log's own lock (recordlog.Writer), which is never held
	// across an fsync but by a rewrite; no write or fsync waits under mu
	// but the rewrite (store.wait runs after mu is released).
	mu         sync.Mutex
	core       *groupCore
	waiters    map[Waiter]chan Reply
	nextWaiter Waiter

	// store: __consumer_offsets or the group log; its appends run
	// under mu (lock order: mu, then the partitions' or the group log's
	// own locks), its waits after mu is released.
	store groupStorage

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// OpenGroups loads the group log from opts.Dir and starts the timer loop.
func OpenGroups(opts GroupsOptions) (*Groups, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.TickInterval <= 0 {
		opts.TickInterval = 100 * time.Millisecond
	}
	if opts.ExpireInterval <= 0 {
		opts.ExpireInterval = time.Minute
	}
	if opts.CompactBytes <= 0 {
		opts.CompactBytes = 4 << 20
	}
	g := &Groups{
		opts: opts, logger: opts.Logger, waiters: map[Waiter]chan Reply{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	g.core = newGroupCore(opts.Config, newMemberID)
	g.core.knobs = opts.private
	store, err := g.openStorage()
	if err != nil {
		return nil, err
	}
	g.store = store
	g.updateMetricsLocked()
	go g.loop()
	return g, nil
}

// newMemberID is Kafka's: the client id (or group instance id), a dash
// and a random UUID.
func newMemberID(prefix string) string {
	var u [16]byte
	rand.Read(u[:])
	h := hex.EncodeToString(u[:])
	return prefix + "-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// batch is the outcome of one core call: records to make durable and
// replies to deliver once they are.
type batch struct {
	wait    func() error // makes the records durable; nil: none
	err     error        // the store refused the records: nothing was queued
	deliver []func(err error)
}

// collectLocked takes what the core produced in the call just made: the
// records are queued for the group log, the replies matched to waiters.
func (g *Groups) collectLocked() batch {
	var b batch
	recs := g.core.takeRecords()
	b.wait, b.err = g.store.append(g.core, recs)
	for _, r := range g.core.takeReplies() {
		ch := g.waiters[r.Waiter]
		if ch == nil {
			continue // its request is gone (connection closed)
		}
		delete(g.waiters, r.Waiter)
		r := r
		b.deliver = append(b.deliver, func(refused error) {
			if refused != nil {
				r = refusedReply(r, refused)
			}
			ch <- r
		})
	}
	return b
}

// refusedReply answers r's request with err instead: its records were
// refused by the group log.
func refusedReply(r Reply, err error) Reply {
	if r.Join != nil {
		r.Join = joinError(r.Join.MemberID, err)
	}
	if r.Sync != nil {
		r.Sync = &SyncResult{Err: err}
	}
	return r
}

// finish makes b durable, then delivers its replies. Records the group
// log refused (longer than it holds) were never queued: nothing waits
// for them, and the replies are that error. The core checks what it
// stores (checkGroupRecord), so a refusal here is a bug behind that
// check; the core has then applied what the log does not hold, until the
// next start.
func (g *Groups) finish(b batch) error {
	var err, refused error
	if b.err != nil {
		err, refused = b.err, b.err
		g.logger.Error("group log refused records; the coordinator's memory holds what the log does not until the next start", zap.Error(err))
	} else if b.wait != nil {
		if err = b.wait(); err != nil {
			g.logger.Error("group store write failed", zap.Error(err))
		}
	}
	for _, d := range b.deliver {
		d(refused)
	}
	return err
}

// call runs fn on the core at the current time, then finish.
func (g *Groups) call(fn func(now time.Time)) error { return g.begin(fn)() }

// begin runs fn on the core at the current time, its records appended to
// the store, and returns finish for them (not yet waited for).
func (g *Groups) begin(fn func(now time.Time)) (finish func() error) {
	im := g.topicImage() // before mu: the broker's registry lock is never taken under it
	g.mu.Lock()
	g.core.image = im
	fn(time.Now())
	b := g.collectLocked()
	g.mu.Unlock()
	return func() error { return g.finish(b) }
}

func (g *Groups) registerLocked() (Waiter, chan Reply) {
	g.nextWaiter++
	ch := make(chan Reply, 1)
	g.waiters[g.nextWaiter] = ch
	return g.nextWaiter, ch
}

func (g *Groups) await(ctx context.Context, w Waiter, ch chan Reply) (Reply, bool) {
	select {
	case r := <-ch:
		return r, true
	case <-ctx.Done():
	case <-g.stop:
	}
	g.mu.Lock()
	delete(g.waiters, w)
	g.mu.Unlock()
	select { // answered meanwhile
	case r := <-ch:
		return r, true
	default:
		return Reply{}, false
	}
}

// Join serves JoinGroup, blocking until the rebalance answers or ctx ends.
func (g *Groups) Join(ctx context.Context, req JoinRequest) *JoinResult {
	var w Waiter
	var ch chan Reply
	g.call(func(now time.Time) {
		w, ch = g.registerLocked()
		g.core.Join(now, req, w)
	})
	r, ok := g.await(ctx, w, ch)
	if !ok {
		return joinError(req.MemberID, ErrCoordinatorNotAvailable)
	}
	return r.Join
}

// Sync serves SyncGroup, blocking until the leader's assignment arrives
// or ctx ends.
func (g *Groups) Sync(ctx context.Context, req SyncRequest) *SyncResult {
	var w Waiter
	var ch chan Reply
	g.call(func(now time.Time) {
		w, ch = g.registerLocked()
		g.core.Sync(now, req, w)
	})
	r, ok := g.await(ctx, w, ch)
	if !ok {
		return &SyncResult{Err: ErrCoordinatorNotAvailable}
	}
	return r.Sync
}

// Heartbeat serves Heartbeat.
func (g *Groups) Heartbeat(groupID, memberID, instanceID string, generation int32) error {
	var err error
	g.call(func(now time.Time) { err = g.core.Heartbeat(now, groupID, memberID, instanceID, generation) })
	return err
}

// Leave serves LeaveGroup: one error per member, or a top-level error.
func (g *Groups) Leave(groupID string, members []LeaveMember) ([]error, error) {
	var errs []error
	var top error
	g.call(func(now time.Time) { errs, top = g.core.Leave(now, groupID, members) })
	return errs, top
}

// CommitOffsets serves OffsetCommit; it returns once the offsets are
// fsynced.
func (g *Groups) CommitOffsets(req CommitRequest) (map[TopicPartition]error, error) {
	var partErrs map[TopicPartition]error
	var top error
	if err := g.call(func(now time.Time) { partErrs, top = g.core.CommitOffsets(now, req) }); err != nil {
		return nil, err
	}
	return partErrs, top
}

// FetchOffsets serves OffsetFetch for one group (tps nil: all).
func (g *Groups) FetchOffsets(groupID string, tps []TopicPartition, requireStable bool) []FetchedOffset {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.core.FetchOffsets(groupID, tps, requireStable)
}

// ListGroups serves ListGroups.
func (g *Groups) ListGroups() []GroupSummary {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.core.ListGroups()
}

// DescribeGroup serves DescribeGroups for one group.
func (g *Groups) DescribeGroup(id string) GroupDescription {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.core.DescribeGroup(id)
}

// DeleteGroups serves DeleteGroups: one error per group.
func (g *Groups) DeleteGroups(ids []string) []error {
	var errs []error
	if err := g.call(func(now time.Time) { errs = g.core.DeleteGroups(now, ids) }); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	return errs
}

// DeleteOffsets serves OffsetDelete.
func (g *Groups) DeleteOffsets(groupID string, tps []TopicPartition) (map[TopicPartition]error, error) {
	var partErrs map[TopicPartition]error
	var top error
	if err := g.call(func(now time.Time) { partErrs, top = g.core.DeleteOffsets(now, groupID, tps) }); err != nil {
		return nil, err
	}
	return partErrs, top
}

// DeleteTopicOffsets drops every group's committed offsets for a deleted
// topic (durably), as Kafka does on topic deletion.
func (g *Groups) DeleteTopicOffsets(topic string) error {
	return g.call(func(time.Time) { g.core.DeleteTopic(topic) })
}

func (g *Groups) stageTxnOffsets(group string, producerID int64, producerEpoch int16, offsets map[TopicPartition]OffsetAndMetadata) (func() error, error) {
	var top error
	finish := g.begin(func(now time.Time) { top = g.core.StageTxn(now, group, producerID, producerEpoch, offsets) })
	if top != nil {
		finish() // nothing staged: no record to wait for
		return nil, top
	}
	return finish, nil
}

func (g *Groups) completeTxnOffsets(producerID int64, epoch int16, coordinatorEpoch int32, commit bool) error {
	return g.call(func(time.Time) { g.core.CompleteTxn(producerID, epoch, coordinatorEpoch, commit) })
}

func (g *Groups) commitOffsetsAdmin(group string, offsets map[TopicPartition]OffsetAndMetadata) error {
	var top error
	if err := g.call(func(now time.Time) { top = g.core.CommitAdmin(now, group, offsets) }); err != nil {
		return err
	}
	return top
}

func (g *Groups) groupIsActive(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	gr := g.core.groups[id]
	return gr != nil && (len(gr.members) > 0 || (gr.cg != nil && len(gr.cg.members) > 0))
}

func (g *Groups) listGroupOffsets(id string) map[TopicPartition]OffsetAndMetadata {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.core.Offsets(id)
}

// loop is the coordinator's one goroutine: timers, offset expiry, group
// log flush and rewrite.
func (g *Groups) loop() {
	defer close(g.done)
	t := time.NewTicker(g.opts.TickInterval)
	defer t.Stop()
	lastExpire := time.Now()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		im := g.topicImage()
		g.mu.Lock()
		g.core.image = im
		now := time.Now()
		g.core.Tick(now)
		if now.Sub(lastExpire) >= g.opts.ExpireInterval {
			lastExpire = now
			g.core.ExpireOffsets(now)
		}
		b := g.collectLocked()
		g.updateMetricsLocked()
		g.mu.Unlock()
		g.finish(b)
		g.store.flush() // records no request waited for (expiry, metadata)
		g.store.maintain(g)
	}
}

// Close stops the timer loop, answers blocked requests with
// COORDINATOR_NOT_AVAILABLE, flushes and closes the group log.
func (g *Groups) Close() error { return g.shutdown(false) }

// Kill stops as a crash would: no flush beyond what each request already
// waited for.
func (g *Groups) Kill() { g.shutdown(true) }

func (g *Groups) shutdown(abandon bool) error {
	var err error
	g.closeOnce.Do(func() {
		close(g.stop)
		<-g.done
		err = g.store.close(abandon)
	})
	return err
}
