package coordinator

import (
	"sort"
	"sync"
)

// maxParallelSyncs bounds the fsyncs one wait issues at once.
const maxParallelSyncs = 16

// syncParts makes every partition of points durable up to its end with
// wait, the partitions' waits issued together rather than one after the
// other: each is the partition's own group commit (an fsync of its
// file), and the file system serves concurrent fsyncs of different files
// in about the time of one (ext4 commits their metadata in one journal
// transaction). It returns once every wait has returned, with the error
// of the lowest failed partition, so an answer never goes out while one
// of its partitions' fsyncs is still running. One partition is waited
// for on the caller's goroutine. With sequential (a test seam, the peer
// of BenchmarkMultiPartitionSync) the waits run one after the other, in
// partition order, stopping at the first failure.
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
