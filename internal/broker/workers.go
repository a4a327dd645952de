package broker

import (
	"sync"
	"sync/atomic"
)

// recoveryThreads is num.recovery.threads.per.data.dir: how many
// partitions are opened at once at start-up and flushed and closed at once
// at shutdown. Kafka's LogManager runs a pool of that many threads per
// data directory for both (loadLogs, shutdown); minibroker has one data
// directory.
func (b *Broker) recoveryThreads() int {
	return int(b.cfg.Int32("num.recovery.threads.per.data.dir"))
}

// forEachBounded calls fn(0) … fn(n-1) on at most workers goroutines and
// returns once every call has returned, with errs[i] the error of fn(i).
// Calls run in no particular order; fn must only touch what belongs to
// its i. With one worker it runs them in order on the caller's goroutine.
func forEachBounded(workers, n int, fn func(i int) error) (errs []error) {
	errs = make([]error, n)
	workers = max(1, min(workers, n))
	if workers == 1 {
		for i := range n {
			errs[i] = fn(i)
		}
		return errs
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				errs[i] = fn(i)
			}
		})
	}
	wg.Wait()
	return errs
}
