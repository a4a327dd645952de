package mirror

import "time"

// TestHooks are the seams tests use: to stand in for a crash at a
// STOPPING step, for a fetcher goroutine the scheduler runs late, or to
// switch a safety rule off for a negative control (the same scenario with
// the rule removed, showing the failure it prevents). They live in the
// unexported knobs (knobs.hooks), set only through WithTestHooks; nil
// makes every hook do nothing. A test embeds NoTestHooks and overrides
// what it needs.
type TestHooks interface {
	// BeforeStopStep is called before each STOPPING step of a
	// partition; an error aborts the stop there, as a crash at that step
	// would.
	BeforeStopStep(step StopStep, topic string, partition int32) error
	// FetcherWoken is called by a partition's fetcher goroutine when a
	// pause or resume wakes it, before it leaves its broker loop.
	FetcherWoken(topic string, partition int32)
	// SkipBarrier leaves the MIRROR_PID_RESET barrier out of STOPPING.
	SkipBarrier() bool
	// SkipAbortMarkers leaves out the ABORT markers of the failover mode
	// abort-open-transactions: the barrier then clears the open
	// transactions' producer state with no marker, and their records
	// become visible to read_committed consumers.
	SkipAbortMarkers() bool
	// SkipBarrierSync leaves out the fsync of the barrier before
	// STOPPED is persisted: a power loss can then take the barrier and
	// keep the STOPPED state that says it was written.
	SkipBarrierSync() bool
	// SkipGroupClamp leaves out STOPPING's clamp of group offsets to the
	// cut.
	SkipGroupClamp() bool
	// SkipEpochWalkBack leaves out PREPARING's walk back through our
	// earlier leader epochs when the source does not know our latest one:
	// the log is cut to its start and mirrored again from there.
	SkipEpochWalkBack() bool
	// SkipIdentityCheck accepts a source that answers with another
	// cluster id; SkipTopicIDCheck a source topic whose id changed (a
	// recreated topic), appending another cluster's or topic's records.
	SkipIdentityCheck() bool
	SkipTopicIDCheck() bool
	// SkipTruncateGuard lets PREPARING cut local data without the start's
	// --allow-truncate, and `mirror start` not refuse it.
	SkipTruncateGuard() bool
	// SkipLoopCheck lets `mirror start` mirror a topic its source mirrors
	// from this cluster.
	SkipLoopCheck() bool
	// AfterLocalTopicCreate is called when a start has created a topic
	// locally, before its partitions are recorded; an error stops the
	// start there, as a crash would.
	AfterLocalTopicCreate(topic string) error
	// SkipPendingTopics leaves out the record of a topic as the mirror's
	// before it is created locally (negative control: a crash after the
	// create leaves a local topic that auto-creation never mirrors).
	SkipPendingTopics() bool
	// BeforeConfigSync is called when the config sync has recorded the
	// names it is about to change and is about to change them; an error
	// stops it there, as a crash would.
	BeforeConfigSync(topic string) error
	// TakeOverLocalTopics lets auto-creation, and a start's topic
	// patterns (topicmatch.go), start a source topic that exists locally
	// and that no mirror knows (negative control: its local records are
	// truncated to the source's).
	TakeOverLocalTopics() bool
	// KeepSourceLeaderEpoch leaves out KIP-1279's leader-epoch
	// invariant: this node's leader epoch is not raised to the source's,
	// and a synced offset clamped to the local log end keeps the source's
	// epoch.
	KeepSourceLeaderEpoch() bool
}

// NoTestHooks does nothing; it is what no hooks (nil) means.
type NoTestHooks struct{}

func (NoTestHooks) BeforeStopStep(StopStep, string, int32) error { return nil }
func (NoTestHooks) FetcherWoken(string, int32)                   {}
func (NoTestHooks) SkipBarrier() bool                            { return false }
func (NoTestHooks) SkipBarrierSync() bool                        { return false }
func (NoTestHooks) SkipAbortMarkers() bool                       { return false }
func (NoTestHooks) SkipGroupClamp() bool                         { return false }
func (NoTestHooks) SkipEpochWalkBack() bool                      { return false }
func (NoTestHooks) SkipIdentityCheck() bool                      { return false }
func (NoTestHooks) SkipTopicIDCheck() bool                       { return false }
func (NoTestHooks) SkipTruncateGuard() bool                      { return false }
func (NoTestHooks) SkipLoopCheck() bool                          { return false }
func (NoTestHooks) AfterLocalTopicCreate(string) error           { return nil }
func (NoTestHooks) SkipPendingTopics() bool                      { return false }
func (NoTestHooks) BeforeConfigSync(string) error                { return nil }
func (NoTestHooks) TakeOverLocalTopics() bool                    { return false }
func (NoTestHooks) KeepSourceLeaderEpoch() bool                  { return false }

// WithTestHooks returns o with the test hooks h in its unexported knobs.
// It is the one seam through which code outside this package (the
// in-process brokers of test/integration/itest, carried in
// BrokerOptions.Mirror, and this package's external tests) reaches the
// knobs; production code never calls it, and no config file, flag or API
// leads to it. The other knobs are set by this package's own tests
// (export_test.go).
func WithTestHooks(o Options, h TestHooks) Options {
	o.private.hooks = h
	return o
}

// knobs are the package's test seams, one unexported struct in the manner
// of pebble's Options.private (carried in Options.private, copied to
// Manager.knobs by Open): never set by a user; the zero value is what
// production runs. hooks is set through WithTestHooks, the rest by this
// package's tests (export_test.go).
type knobs struct {
	// hooks are the TestHooks above; Open makes nil NoTestHooks.
	hooks TestHooks
	// beforeFetcherExit is called by a fetcher's goroutine as it exits,
	// before it says it is done: a test holds it there to see who waits.
	beforeFetcherExit func(topic string, partition int32)
	// appendGate, when set, is called by the broker loop's appender before
	// it appends for a partition: a test holds one partition's append there
	// (as an fsync that takes long would) to see what waits for it.
	appendGate func(topic string, partition int32)
	// persistLast and barrierFirst break the core's two ordering rules
	// (core.go), for the negative controls of core_test.go: persistLast
	// applies a step's persist after its other effects; barrierFirst
	// writes STOPPING's barrier before the truncation to the LSO.
	persistLast, barrierFirst bool
	// barrierBeforeAborts writes the barrier of abort-open-transactions
	// before its ABORT markers (core.go's barrierEffects).
	barrierBeforeAborts bool
	// noFetchEpoch makes the mirror's fetches send CurrentLeaderEpoch -1
	// (no fencing, epoch.go's rule removed): a source then never fences them.
	noFetchEpoch bool
	// dropFailSaveError makes a fetcher drop the error of persisting
	// FAILED and exit, leaving the partition's state unsaved.
	dropFailSaveError bool
	// beforeSave is called by a save of a mirror's state, holding the
	// mirror's lock and the store's, before it writes: a test holds it
	// there (as a slow fsync would) to see what waits.
	beforeSave func(mirror string)
	// oneLock gives every mirror the same lock (one mirror's slow save
	// then blocks the others), for the per-mirror lock's negative control.
	oneLock bool
	// asyncStreakReset ends a failure streak in a goroutine of its own
	// after this long (unordered against a later failure, and waited for
	// by nothing), for the negative control of the ordered reset.
	asyncStreakReset time.Duration
	// removeLegacyFirst makes an upgrade of the state store remove its
	// old file before the new store holds its document (statelog.go;
	// carried in store.knobs).
	removeLegacyFirst bool
	// stateSkipSync makes an append to __mirror_state return without
	// waiting for its fsync (statetopic.go; carried in
	// partitionTopic.knobs).
	stateSkipSync bool
}
