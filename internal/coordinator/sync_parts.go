package coordinator

import (
	"sort"
	"sync"
	"sync/atomic"
)

// maxParallelSyncs bounds the fsyncs one wait issues at once.
const maxParallelSyncs = 16

// syncParts makes every partition of points durable up to its end with
// wait, the partitions' waits issued together rather than one after the
// other: each is the partition's own group commit (an fsync of its
// file), and the file system serves concurrent fsyncs of different files
// in about the time of one (ext4 commits their metadata in one journal
// transaction). It returns once every wait has returned, with the error
// of the lowest failed partition. One partition is waited for on the
// caller's goroutine. With sequential (a test seam, the peer of the
// benchmarks) the waits run one after the other, in partition order.
func syncParts(points syncPoint, sequential bool, wait func(p int32, end int64) error) error {
	if len(points) == 0 {
		return nil
	}
	sort.Slice(points, func(i, j int) bool { return points[i].p < points[j].p })
	if len(points) == 1 || sequential {
		for _, pe := range points {
			if err := wait(pe.p, pe.end); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, len(points))
	sem := make(chan struct{}, maxParallelSyncs)
	var wg sync.WaitGroup
	for i, pe := range points {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = wait(pe.p, pe.end)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// pointOf is ends as a syncPoint.
func pointOf(ends map[int32]int64) syncPoint {
	out := make(syncPoint, 0, len(ends))
	for p, end := range ends {
		out = append(out, partEnd{p, end})
	}
	return out
}

// joiners counts, per partition of an internal topic, the requests that
// will append to it and have not yet: each is counted from before it
// takes the coordinator's lock until its records are appended. A request
// waiting for its partition's fsync lets the group commit yield for
// others' records (Sync) only when some are coming; otherwise its fsync
// starts at once (SyncAlone): a lone writer, such as a consumer group's
// committer alone on its __consumer_offsets partition, has no one to
// wait for, and the yield cost it a place behind every runnable
// goroutine on a busy machine.
type joiners struct{ n []atomic.Int32 }

func newJoiners(parts int32) *joiners { return &joiners{n: make([]atomic.Int32, max(parts, 0))} }

// enter counts a request for partition p until the returned func runs.
func (j *joiners) enter(p int32) (appended func()) {
	if j == nil || p < 0 || int(p) >= len(j.n) {
		return func() {}
	}
	j.n[p].Add(1)
	var once sync.Once
	return func() { once.Do(func() { j.n[p].Add(-1) }) }
}

// coming reports whether a request for p is on its way to append.
func (j *joiners) coming(p int32) bool {
	return j != nil && p >= 0 && int(p) < len(j.n) && j.n[p].Load() > 0
}

// syncer is an internal topic's two waits (itopic.Log's).
type syncer interface {
	Sync(p int32, end int64) error
	SyncAlone(p int32, end int64) error
}

// waitFor is the wait for one partition: Sync when another request for
// it is coming, SyncAlone otherwise.
func (j *joiners) waitFor(t syncer) func(p int32, end int64) error {
	return func(p int32, end int64) error {
		if j.coming(p) {
			return t.Sync(p, end)
		}
		return t.SyncAlone(p, end)
	}
}
