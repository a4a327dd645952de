package mirror

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// Retry of FAILED partitions. A partition fails for a retriable reason
// when the cause may pass without anyone changing the mirror: the source
// denies the mirror's principal the topic (an ACL missing, granted later),
// the source answers a corrupt batch, the local log refuses an append (a
// disk error), or the divergence search does not settle. Such a partition
// goes FAILED (read-only, the reason in describe) and is started again
// (PREPARING, then MIRRORING) after mirror.failed.retry.initial.backoff.ms,
// doubling per consecutive failure up to
// mirror.failed.retry.max.backoff.ms, at most
// mirror.failed.retry.max.attempts times in a row (then it stays FAILED
// until `mirror start` or a source-config change). A fetch that succeeds
// ends the streak. Network errors are not failures at all (the fetcher
// retries them in place), and these never retry: another cluster or a
// recreated topic (identity.go), a truncation not allowed (failback.go),
// credentials or certificates refused (until the source config changes).

// localAppendError is the local log refusing mirrored batches.
type localAppendError struct{ err error }

func (e *localAppendError) Error() string { return "append mirrored batches: " + e.err.Error() }
func (e *localAppendError) Unwrap() error { return e.err }

// errNoConvergence is a divergence search that did not settle.
var errNoConvergence = errors.New("divergence search did not converge")

// isRetriableFailure reports whether err fails the partition for a reason
// retried with backoff.
func isRetriableFailure(err error) bool {
	var ae *localAppendError
	switch {
	case err == nil || isIdentityError(err) || isTruncateRefused(err) || isSecurityFailure(err):
		return false
	case errors.As(err, &ae), errors.Is(err, errNoConvergence):
		return true
	}
	for _, ke := range []error{kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed, kerr.CorruptMessage} {
		if errors.Is(err, ke) {
			return true
		}
	}
	return false
}

// retryBackoff is the wait before retry number streak (1-based) of a
// consecutive run: initial·2^(streak-1), at most max.
func retryBackoff(s *Settings, streak int) time.Duration {
	return retryBackoffOf(retryPolicyOf(s), streak)
}

// retryPolicyOf is the part of the settings the core's fail reads.
func retryPolicyOf(s *Settings) retryPolicy {
	return retryPolicy{Initial: s.FailedRetryInitialBackoff, Max: s.FailedRetryMaxBackoff, MaxAttempts: s.FailedRetryMaxAttempts}
}

// failRetriable moves a partition to FAILED for a retriable reason and
// schedules its retry (unless the attempts in a row are used up). It
// answers the error of persisting FAILED: the record is then unchanged and
// no retry is armed.
func (m *Manager) failRetriable(rt *liveMirror, k tp, err error) error {
	rt.mu.Lock()
	rec := rt.spec.Topics[k.topic].Partitions[k.partition]
	next, effs, terr := step(*rec, coreEvent{Kind: EvFail, Fail: failRetriable, Reason: err.Error(),
		Now: time.Now().UnixMilli(), Retry: retryPolicyOf(rt.settings())})
	if terr != nil { // STOPPING goes on; STOPPED and FAILED stay
		rt.mu.Unlock()
		return nil
	}
	snap := snapshotLocked(rt, []tp{k})
	*rec = next
	if serr := m.saveOrRestoreLocked(rt, snap); serr != nil {
		rt.mu.Unlock()
		return serr
	}
	var at time.Time
	for _, e := range effs {
		if e.Kind == effArmRetry {
			at = time.UnixMilli(e.At)
			m.scheduleRetryLocked(rt, k, time.Until(at))
		}
	}
	// stop-fetcher: the fetcher that called this exits on its own.
	rt.mu.Unlock()
	m.logger.Warn("mirror partition failed; retrying later", zap.String("mirror", rt.spec.Name), zap.String("topic", k.topic),
		zap.Int32("partition", k.partition), zap.Error(err), zap.Time("retry_at", at))
	return nil
}

// scheduleRetryLocked arms the partition's retry timer; m.mu held.
func (m *Manager) scheduleRetryLocked(rt *liveMirror, k tp, d time.Duration) {
	if rt.retries == nil {
		rt.retries = map[tp]*time.Timer{}
	}
	if t := rt.retries[k]; t != nil {
		t.Stop()
	}
	rt.retries[k] = time.AfterFunc(max(d, 0), func() { m.retry(rt, k) })
}

// stopRetriesLocked disarms every retry timer of rt; m.mu held.
func stopRetriesLocked(rt *liveMirror) {
	for k, t := range rt.retries {
		t.Stop()
		delete(rt.retries, k)
	}
}

// retry starts a partition FAILED for a retriable reason again.
func (m *Manager) retry(rt *liveMirror, k tp) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	delete(rt.retries, k)
	if m.goneLocked(rt) {
		return // deleted or closing
	}
	ts := rt.spec.Topics[k.topic]
	if ts == nil || ts.Partitions[k.partition] == nil {
		return
	}
	rec := ts.Partitions[k.partition]
	next, _, err := step(*rec, coreEvent{Kind: EvRetryDue})
	if err != nil {
		return // stopped, restarted or altered meanwhile
	}
	parts := m.local.Partitions(k.topic)
	if int(k.partition) >= len(parts) {
		return
	}
	snap := snapshotLocked(rt, []tp{k})
	*rec = next
	if err := m.saveOrRestoreLocked(rt, snap); err != nil {
		// Still FAILED, waiting for its retry: try again later.
		d := rt.settings().FailedRetryInitialBackoff
		m.logger.Error("persisting a retry; trying again later", zap.String("mirror", rt.spec.Name), zap.Error(err),
			zap.Duration("in", d))
		m.scheduleRetryLocked(rt, k, d)
		return
	}
	m.logger.Info("retrying a failed mirror partition", zap.String("mirror", rt.spec.Name), zap.String("topic", k.topic),
		zap.Int32("partition", k.partition), zap.Int("retry", rec.Retries), zap.String("failed_for", rec.Reason))
	m.startFetcherLocked(rt, k.topic, k.partition, parts[k.partition], false)
	if f := rt.fetchers[k]; f != nil {
		f.retried.Store(true)
	}
}

// appended is called by the broker loop's appender after a fetch answer
// for f was applied, holding no lock. After a retry, it ends the
// partition's streak of failures (the next failure waits the initial
// backoff again), persisted before the appender goes on: a later failure
// of the partition reaches its fetcher through this appender's evict (or
// the fetcher's own look at the source after an eviction), so it is
// ordered after the reset. (It ran in a goroutine of its own before,
// which nothing waited for and nothing ordered against that failure.) A
// save that fails keeps the streak, and the next answer tries again.
func (f *fetcher) appended() {
	if !f.retried.Load() {
		return
	}
	if d := f.m.knobs.asyncStreakReset; d > 0 {
		f.retried.Store(false)
		go func() {
			time.Sleep(d)
			_ = f.m.setRecord(f.rt, f.k, func(r *partitionRecord) {
				if next, _, err := step(*r, coreEvent{Kind: EvFetchOK}); err == nil {
					*r = next
				}
			})
		}()
		return
	}
	if err := f.m.setRecord(f.rt, f.k, func(r *partitionRecord) {
		if next, _, err := step(*r, coreEvent{Kind: EvFetchOK}); err == nil {
			*r = next
		}
	}); err != nil {
		f.logger().Warn("persisting the end of a failure streak", zap.Error(err))
		return
	}
	f.retried.Store(false)
}
