package coordinator

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/vfs"
)

// ErrPartitionGone is what a TxnMarkerWriter returns for a partition that
// no longer exists: its marker is skipped, as Kafka drops markers for
// deleted partitions.
var ErrPartitionGone = errors.New("coordinator: partition no longer exists")

// maxParallelMarkers bounds how many markers of one transaction are
// written at once.
const maxParallelMarkers = 8

// TxnMarkerWriter appends transaction markers (origin COORDINATOR); the
// broker implements it over its partitions.
type TxnMarkerWriter interface {
	WriteTxnMarker(tp TopicPartition, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) error
}

// TxnMarkerChecker is implemented by a TxnMarkerWriter that can tell,
// before a commit is decided, that a partition cannot take its marker
// (minibroker: a partition that became mirrored, read-only). EndTxn then
// refuses the commit with ErrTransactionAbortable instead of deciding a
// commit whose records cannot be made visible.
type TxnMarkerChecker interface {
	CheckTxnMarker(tp TopicPartition) error
}

// TxnOffsets completes a producer's transactional offsets (the group
// coordinator's CompleteTxnOffsets, which writes the markers of
// __consumer_offsets' partitions: epoch and coordinatorEpoch are the
// markers').
type TxnOffsets interface {
	CompleteTxnOffsets(producerID int64, epoch int16, coordinatorEpoch int32, commit bool) error
}

// TxnOptions are the transaction coordinator's collaborators.
type TxnOptions struct {
	FS  vfs.FS
	Dir string // where txn-coordinator-epoch is (and an old transaction-state.log)
	// Topic is __transaction_state, the store of record.
	Topic       TxnStateTopic
	Config      TxnConfig
	ProducerIDs *ProducerIDs
	Markers     TxnMarkerWriter
	Offsets     TxnOffsets // nil: transactions may not add offsets
	Logger      *zap.Logger
	Registry    prometheus.Registerer // nil: no metrics registered
	Now         func() time.Time
	// RetryInterval is how soon a failed marker write is retried; 0 means
	// one second.
	RetryInterval time.Duration

	// private are the test seams (knobs.go; removeLegacyFirst): set only
	// by this package's tests.
	private knobs
}

// Transactions is the transaction coordinator: the TxnMachine behind a
// mutex, its store of record __transaction_state (records are appended
// under the mutex to the id's partition and fsynced outside it, by the
// partition's group commit, one fsync serving every request waiting on
// that partition at the time; no request is answered, and no marker
// written, before what it rests on is durable: the id's own records, all
// in its partition), the marker writer, and one goroutine (started by
// Start, stopped and waited for by Close) that aborts timed-out
// transactions, expires idle transactional ids and retries unfinished
// markers — including those of transactions decided before a crash.
type Transactions struct {
	opts    TxnOptions
	logger  *zap.Logger
	metrics *TxnMetrics

	// decideMu orders transactional appends before the decisions that
	// end their transaction: a Produce holds it shared from its check to
	// the end of its append (VerifyProduce), and a commit or abort is
	// decided holding it exclusively. So no data of a transaction can land
	// after its marker (a hanging transaction); a TxnOffsetCommit holds
	// it shared from its check to its offsets' append. Lock order:
	// decideMu, then a partition's locks (the verified append), the group
	// coordinator's mu (the staging) or mu; mu, then the
	// __transaction_state partitions' locks (Append).
	decideMu sync.RWMutex
	// decideGen counts decideMu's exclusive holds (lockDecide): written
	// under decideMu held exclusively, read under it held shared. A
	// Produce that adds its partition, or a TxnOffsetCommit v5 its group,
	// waits for the add's fsync without decideMu, and appends (stages)
	// only if no exclusive holder came meanwhile (AddAndVerifyProduce,
	// TxnOffsetCommitV2).
	decideGen uint64

	mu      sync.Mutex // guards the fields below
	machine *TxnMachine
	topic   TxnStateTopic
	parts   int32
	ends    map[int32]int64 // per partition, its log end after the last record appended
	epoch   int32           // coordinator epoch of this incarnation
	// epochDurable: txn-coordinator-epoch holds epoch (a start with no
	// state writes it with the first record).
	epochDurable bool
	inFlight     map[string]bool // ids whose markers someone is writing
	// written remembers, per id, the partitions whose marker is written
	// for a job not yet complete, so a retry does not repeat them. Only
	// the job's claimant touches its entry.
	written  map[string]*markerProgress
	stopping bool // Close has begun
	closed   bool

	kick    chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
	started bool
}

// OpenTransactions reads the coordinator's state back from opts.Topic
// (moving an old transaction-state.log in opts.Dir into it first, see
// txn_upgrade.go).
func OpenTransactions(opts TxnOptions) (*Transactions, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = time.Second
	}
	if opts.Topic == nil {
		return nil, errors.New("coordinator: no __transaction_state")
	}
	start := time.Now()
	st, err := openTxnState(opts.FS, opts.Dir, opts.Topic, opts.private)
	if err != nil {
		return nil, err
	}
	t := &Transactions{opts: opts, logger: opts.Logger, topic: opts.Topic, parts: opts.Topic.Partitions(),
		ends: map[int32]int64{}, epoch: st.epoch, epochDurable: st.epochDurable,
		inFlight: map[string]bool{}, written: map[string]*markerProgress{},
		kick: make(chan struct{}, 1), stop: make(chan struct{})}
	t.metrics = newTxnMetrics(t, opts.Registry)
	t.machine = NewTxnMachine(opts.Config, t.newProducerID, t.persistLocked)
	for _, md := range st.states {
		t.machine.Load(md)
	}
	if st.migrated {
		t.logger.Info("moved the transaction log into __transaction_state and removed it", zap.String("file", txnLogFile),
			zap.Int("transactional_ids", len(st.states)), zap.Int("torn_tail_bytes", st.torn))
	}
	if st.skipped > 0 {
		t.logger.Warn("__transaction_state records skipped: not the coordinator's", zap.Int("records", st.skipped))
	}
	t.logger.Info("transaction state loaded from __transaction_state", zap.Int("transactional_ids", len(st.states)),
		zap.Int("records_read", st.read), zap.Int32("coordinator_epoch", st.epoch),
		zap.Int("pending_markers", len(t.machine.PendingMarkers())), zap.Duration("took", time.Since(start)))
	return t, nil
}

func (t *Transactions) nowMs() int64 { return t.opts.Now().UnixMilli() }

func (t *Transactions) newProducerID() (int64, error) {
	id, err := t.opts.ProducerIDs.Next()
	if err == nil {
		t.metrics.ProducerIDsIssued.Inc()
	}
	return id, err
}

// NextProducerID hands out a producer id for an idempotent producer.
func (t *Transactions) NextProducerID() (int64, error) { return t.newProducerID() }

// persistLocked appends md's record to its id's partition. The first
// record of a coordinator that started with no state first writes the
// coordinator epoch (txn_upgrade.go), durably, under mu: once.
func (t *Transactions) persistLocked(md TxnMetadata) error {
	if t.closed {
		return errors.New("coordinator closed")
	}
	if !t.epochDurable {
		if err := writeTxnEpoch(t.opts.FS, t.opts.Dir, t.epoch); err != nil {
			return err
		}
		t.epochDurable = true
	}
	p := PartitionFor(md.TransactionalID, t.parts)
	end, err := t.topic.Append(p, []TopicRecord{{Key: txnKey(md.TransactionalID), Value: txnValue(md)}})
	if err != nil {
		// ErrRecordTooLarge: refused, nothing written, the partition
		// still usable; the state is not installed (TxnMachine.apply).
		return err
	}
	t.ends[p] = end
	return nil
}

// syncPoint is what an answer waits for: partitions and the log end of
// each to be durable.
type syncPoint []partEnd

type partEnd struct {
	p   int32
	end int64
}

// pointLocked is the sync point of a request about txnID: every record
// of the id written so far (its own, and an earlier, still unsynced
// request's that its answer may rest on) is in the id's partition, below
// that partition's end. mu held.
func (t *Transactions) pointLocked(txnID string) syncPoint {
	p := PartitionFor(txnID, t.parts)
	if end, ok := t.ends[p]; ok {
		return syncPoint{{p, end}}
	}
	return nil
}

// allPointLocked is the sync point of everything written so far. mu held.
func (t *Transactions) allPointLocked() syncPoint {
	out := make(syncPoint, 0, len(t.ends))
	for p, end := range t.ends {
		out = append(out, partEnd{p, end})
	}
	return out
}

// lockDecide takes decideMu exclusively (to decide, fence or abort) and
// counts the hold (decideGen).
func (t *Transactions) lockDecide() {
	t.decideMu.Lock()
	t.decideGen++
}

// durable waits until every partition of after is fsynced up to its end.
// Nothing to wait for costs no fsync. Called without mu, so concurrent
// requests share an fsync.
func (t *Transactions) durable(after syncPoint) error {
	if err := syncParts(after, false, t.topic.Sync); err != nil {
		return fmt.Errorf("%w: %v", ErrTxnLogUnavailable, err)
	}
	return nil
}

// release gives up a claimed job that must not run (its decision is not
// durable).
func (t *Transactions) release(job *MarkerJob) {
	t.mu.Lock()
	delete(t.inFlight, job.TransactionalID)
	t.mu.Unlock()
}

// CoordinatorEpoch is this incarnation's coordinator epoch.
func (t *Transactions) CoordinatorEpoch() int32 { return t.epoch }

// Start runs the coordinator's goroutine. Call it once the partitions are
// open: it first finishes the markers of transactions decided before a
// crash.
func (t *Transactions) Start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started || t.closed {
		return
	}
	t.started = true
	t.wg.Add(1)
	go t.run()
}

// Close stops the goroutine, waits for it, and makes the records no
// request waited for (Complete records) durable.
func (t *Transactions) Close() error {
	t.mu.Lock()
	if t.closed || t.stopping {
		t.mu.Unlock()
		return nil
	}
	t.stopping = true
	close(t.stop)
	t.mu.Unlock()
	t.wg.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	var errs []error
	for _, pe := range t.allPointLocked() {
		errs = append(errs, t.topic.Sync(pe.p, pe.end))
	}
	return errors.Join(errs...)
}

func (t *Transactions) poke() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// claimLocked marks job as being written by the caller; false if someone
// else is already writing it.
func (t *Transactions) claimLocked(job *MarkerJob) bool {
	if job == nil || t.inFlight[job.TransactionalID] {
		return false
	}
	t.inFlight[job.TransactionalID] = true
	return true
}

// markerProgress is which partitions of one job have their marker.
type markerProgress struct {
	producerID int64
	epoch      int16
	commit     bool
	done       map[TopicPartition]bool
}

// runJob writes a decided transaction's markers and completes its
// offsets, then records it complete. The caller claimed the job.
func (t *Transactions) runJob(job *MarkerJob) error {
	if err := t.topic.Err(PartitionFor(job.TransactionalID, t.parts)); err != nil {
		// The decision may not be durable: writing its markers could
		// contradict the state the next start recovers.
		t.release(job)
		return err
	}
	t.mu.Lock()
	progress := t.written[job.TransactionalID]
	if progress == nil || progress.producerID != job.ProducerID || progress.epoch != job.ProducerEpoch || progress.commit != job.Commit {
		progress = &markerProgress{producerID: job.ProducerID, epoch: job.ProducerEpoch, commit: job.Commit, done: map[TopicPartition]bool{}}
		t.written[job.TransactionalID] = progress
	}
	t.mu.Unlock()
	err := t.writeMarkers(job, progress)
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.inFlight, job.TransactionalID)
	if err == nil && !t.closed {
		err = t.machine.CompleteMarkers(job, t.nowMs())
	}
	if err == nil {
		delete(t.written, job.TransactionalID)
	}
	if err != nil {
		t.logger.Warn("transaction markers not finished; will retry", zap.String("transactional_id", job.TransactionalID),
			zap.Int64("producer_id", job.ProducerID), zap.Bool("commit", job.Commit), zap.Error(err))
		return err
	}
	t.metrics.Completed.WithLabelValues(endName(job.Commit)).Inc()
	t.poke() // the id's expiration is now the deadline to watch
	return nil
}

// writeMarkers writes the markers of job that progress does not already
// record. At start-up, for a transaction decided before a crash, that is
// all of them: a partition that already holds its marker gets a second
// one, which is harmless — the producer has no open transaction there any
// more, so the marker ends nothing and consumers skip it like any control
// batch.
func (t *Transactions) writeMarkers(job *MarkerJob, progress *markerProgress) error {
	// Partitions are independent: their markers (each possibly waiting
	// for an fsync) are written in parallel, a few at a time.
	errs := make([]error, len(job.Partitions))
	sem := make(chan struct{}, maxParallelMarkers)
	var wg sync.WaitGroup
	for i, tp := range job.Partitions {
		if progress.done[tp] {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := t.opts.Markers.WriteTxnMarker(tp, job.ProducerID, job.ProducerEpoch, job.Commit, t.epoch)
			if errors.Is(err, ErrPartitionGone) {
				t.logger.Info("transaction marker skipped: partition gone", zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition))
				err = nil
			}
			if err != nil {
				errs[i] = fmt.Errorf("marker for %s-%d: %w", tp.Topic, tp.Partition, err)
			}
		}()
	}
	wg.Wait()
	for i, tp := range job.Partitions {
		if errs[i] == nil {
			progress.done[tp] = true
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if job.HasGroups {
		if t.opts.Offsets == nil {
			return errors.New("no group coordinator to complete transactional offsets")
		}
		if err := t.opts.Offsets.CompleteTxnOffsets(job.ProducerID, job.ProducerEpoch, t.epoch, job.Commit); err != nil {
			return fmt.Errorf("complete transactional offsets: %w", err)
		}
	}
	return nil
}

// InitProducerID serves InitProducerId with a transactional id (see
// TxnMachine.InitProducerID). When it aborts the id's open transaction,
// the abort's markers are written before CONCURRENT_TRANSACTIONS is
// returned, so the client's retry succeeds at once.
func (t *Transactions) InitProducerID(txnID string, timeoutMs int32, expectedPID int64, expectedEpoch int16) (InitResult, error) {
	t.lockDecide()
	t.mu.Lock()
	res, job, err := t.machine.InitProducerID(txnID, timeoutMs, expectedPID, expectedEpoch, t.nowMs())
	after := t.pointLocked(txnID)
	claimed := t.claimLocked(job)
	t.mu.Unlock()
	t.decideMu.Unlock()
	if derr := t.durable(after); derr != nil {
		if claimed {
			t.release(job)
		}
		return InitResult{ProducerID: noProducerID, ProducerEpoch: noProducerEpoch}, derr
	}
	if claimed && t.runJob(job) != nil {
		t.poke()
	}
	if err == nil {
		t.poke() // a new or bumped id: its expiration may be the next deadline
	}
	return res, err
}

// AddPartitions serves AddPartitionsToTxn.
func (t *Transactions) AddPartitions(txnID string, pid int64, epoch int16, parts []TopicPartition) error {
	t.mu.Lock()
	err := t.machine.AddPartitions(txnID, pid, epoch, parts, t.nowMs())
	after := t.pointLocked(txnID)
	t.mu.Unlock()
	t.poke() // a new transaction's timeout may be the next deadline
	if err != nil {
		return err
	}
	return t.durable(after)
}

// AddOffsets serves AddOffsetsToTxn.
func (t *Transactions) AddOffsets(txnID string, pid int64, epoch int16, group string) error {
	t.mu.Lock()
	err := t.machine.AddOffsets(txnID, pid, epoch, group, t.nowMs())
	after := t.pointLocked(txnID)
	t.mu.Unlock()
	t.poke()
	if err != nil {
		return err
	}
	return t.durable(after)
}

// EndTxn serves EndTxn. Once the decision is durable the markers are
// written before it returns, so a read_committed consumer sees a commit as
// soon as the producer does. If a marker cannot be written the decision
// stands (the answer is success, as in Kafka) and the goroutine retries.
func (t *Transactions) EndTxn(txnID string, pid int64, epoch int16, commit bool) error {
	return t.endTxn(txnID, pid, epoch, commit, func(now int64) (*MarkerJob, error) {
		return t.machine.EndTxn(txnID, pid, epoch, commit, now)
	})
}

// endTxn is the one path of EndTxn and EndTxnV2: under decideMu and mu,
// the commit check (checkCommitLocked) and the machine's decision
// (decide); then the decision made durable, then its markers written by
// the caller if no one else is writing them. The locks are released by
// defer, so a panic in decide cannot leave decideMu held and every later
// decision blocked.
func (t *Transactions) endTxn(txnID string, pid int64, epoch int16, commit bool, decide func(nowMs int64) (*MarkerJob, error)) error {
	job, after, claimed, err := func() (*MarkerJob, syncPoint, bool, error) {
		t.lockDecide()
		defer t.decideMu.Unlock()
		t.mu.Lock()
		defer t.mu.Unlock()
		if commit {
			if err := t.checkCommitLocked(txnID, pid, epoch); err != nil {
				return nil, nil, false, err
			}
		}
		job, err := decide(t.nowMs())
		after := t.pointLocked(txnID)
		return job, after, t.claimLocked(job), err
	}()
	if err != nil {
		return err // the machine decides nothing, so no job, when it refuses
	}
	if err := t.durable(after); err != nil {
		if claimed {
			t.release(job)
		}
		return err
	}
	if claimed && t.runJob(job) != nil {
		t.poke()
	}
	return nil
}

// checkCommitLocked refuses to decide a commit when a partition of the
// producer's open transaction cannot take the COMMIT marker: the
// transaction stays Ongoing and the client is told to abort
// (ErrTransactionAbortable). Kafka's coordinator, which answers EndTxn once
// the decision is logged, retries a marker for a partition whose leader it
// cannot reach until a leader takes it; a mirrored partition here never
// will (and the mirror cuts the transaction's records from it), so
// deciding the commit would report records committed that no consumer
// will ever read. Anything else (wrong epoch, no open transaction) is left
// to the machine's own checks. t.mu held.
func (t *Transactions) checkCommitLocked(txnID string, pid int64, epoch int16) error {
	checker, ok := t.opts.Markers.(TxnMarkerChecker)
	if !ok {
		return nil
	}
	cur := t.machine.txns[txnID]
	if cur == nil || cur.ProducerID != pid || cur.ProducerEpoch != epoch || cur.State != TxnOngoing {
		return nil
	}
	for _, tp := range cur.Partitions {
		if err := checker.CheckTxnMarker(tp); err != nil {
			t.logger.Warn("commit refused: a partition of the transaction cannot take its marker; the client must abort",
				zap.String("transactional_id", txnID), zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition), zap.Error(err))
			return fmt.Errorf("%w: %s-%d cannot take the COMMIT marker: %v", ErrTransactionAbortable, tp.Topic, tp.Partition, err)
		}
	}
	return nil
}

// StageFunc stages a TxnOffsetCommit's offsets (the group coordinator's
// StageTxnOffsetsAsync): it appends their records to __consumer_offsets
// and returns the wait for their fsync.
type StageFunc func() (wait func() error, err error)

// TxnOffsetCommit checks a TxnOffsetCommit against the transaction and,
// if it passes, runs stage before the transaction can be decided, so the
// offsets are always completed with it: the check and stage's append are
// made under the same shared decideMu, and the records precede any marker
// of the transaction in __consumer_offsets. The wait for their fsync is
// made without decideMu, so a decision (decideMu exclusive) does not wait
// for it; a marker that follows them is fsynced with them.
func (t *Transactions) TxnOffsetCommit(txnID string, pid int64, epoch int16, group string, stage StageFunc) error {
	t.decideMu.RLock()
	t.mu.Lock()
	err := t.machine.CheckTxnOffsetCommit(txnID, pid, epoch, group)
	t.mu.Unlock()
	if err != nil {
		t.decideMu.RUnlock()
		return err
	}
	return t.stageAndWait(stage, t.opts.private.durableUnderDecideMu)
}

// stageAndWait runs stage with decideMu held shared, releases it and
// waits for the staged records' fsync; hold waits before releasing it.
// The release is deferred, so a panic in the group coordinator cannot
// leave decideMu held and every later decision blocked.
func (t *Transactions) stageAndWait(stage StageFunc, hold bool) error {
	var wait func() error
	err := func() error {
		defer t.decideMu.RUnlock()
		w, err := stage()
		if err != nil {
			return err
		}
		if hold {
			return w()
		}
		wait = w
		return nil
	}()
	if err != nil || wait == nil {
		return err
	}
	if h := t.opts.private.beforeOffsetsWait; h != nil {
		h()
	}
	return wait()
}

// VerifyProduce checks a transactional Produce against the transaction.
// On success the caller must call release once its append is done (or
// failed): until then the transaction cannot be decided.
func (t *Transactions) VerifyProduce(txnID string, pid int64, epoch int16, tp TopicPartition) (release func(), err error) {
	t.decideMu.RLock()
	t.mu.Lock()
	err = t.machine.CheckProduce(txnID, pid, epoch, tp)
	t.mu.Unlock()
	if err != nil {
		t.decideMu.RUnlock()
		return func() {}, err
	}
	return t.decideMu.RUnlock, nil
}

// Describe returns a transactional id's state.
func (t *Transactions) Describe(txnID string) (TxnMetadata, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	md, ok := t.machine.Get(txnID)
	if !ok {
		return md, fmt.Errorf("%w: %q", ErrTransactionalIDNotFound, txnID)
	}
	return md, nil
}

// List returns every transactional id's state, sorted by id.
func (t *Transactions) List() []TxnMetadata {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.machine.All()
}

func (t *Transactions) run() {
	defer t.wg.Done()
	timer := time.NewTimer(0) // at once: markers left over from before a crash
	defer timer.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-t.kick:
		case <-timer.C:
		}
		timer.Reset(t.tick())
	}
}

// tick aborts timed-out transactions, expires idle ids and retries
// unfinished markers, and says how long to sleep. (The topic is compacted
// by the broker's log cleaner, as any compacted topic.)
func (t *Transactions) tick() time.Duration {
	now := t.nowMs()
	var jobs []*MarkerJob
	t.lockDecide()
	t.mu.Lock()
	for _, id := range t.machine.TimedOut(now) {
		job, err := t.machine.AbortTimedOut(id, now)
		if err != nil {
			t.logger.Warn("abort of timed-out transaction failed", zap.String("transactional_id", id), zap.Error(err))
			continue
		}
		if job != nil {
			t.metrics.TimedOut.Inc()
			t.logger.Info("transaction timed out; aborting", zap.String("transactional_id", id),
				zap.Int64("producer_id", job.ProducerID), zap.Int16("bumped_epoch", job.ProducerEpoch))
		}
	}
	if ids, err := t.machine.ExpireIDs(now); err != nil {
		t.logger.Warn("transactional id expiration failed", zap.Error(err))
	} else if len(ids) > 0 {
		t.logger.Info("transactional ids expired", zap.Strings("ids", ids))
	}
	for _, job := range t.machine.PendingMarkers() {
		if t.claimLocked(job) {
			jobs = append(jobs, job)
		}
	}
	deadline, hasDeadline := t.machine.NextDeadline()
	after := t.allPointLocked()
	t.mu.Unlock()
	t.decideMu.Unlock()
	if err := t.durable(after); err != nil {
		t.logger.Warn("transaction log fsync failed", zap.Error(err))
		for _, job := range jobs {
			t.release(job)
		}
		jobs = nil
	}

	failed := false
	for _, job := range jobs {
		if t.runJob(job) != nil {
			failed = true
		}
	}
	wait := time.Minute
	if hasDeadline {
		wait = min(wait, time.Duration(deadline-t.nowMs())*time.Millisecond)
	}
	if failed {
		wait = min(wait, t.opts.RetryInterval)
	}
	return max(wait, time.Millisecond)
}
