package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkSyncFloor: what a coordinator's durable write costs the file
// system, without minibroker: 8 writers each appending 110-byte records
// (an OffsetCommit's batch) and waiting for them to be on disk, in six
// ways, in alternating rounds: each writer its own file with fsync (the
// __consumer_offsets partitions, one group each), the same with
// fdatasync, the same with fdatasync into a file written with zeros
// beforehand (no size or block change, so no journal commit), all 8 in
// one file with a group commit (one writer at a time fsyncs what all
// have written: the single group log), and each writer its own file with
// one group commit over all the files (one writer at a time fsyncs every
// file written since the last sync, one after another; -sfr: after
// starting the writeback of all of them with sync_file_range), what one
// commit across a coordinator's partitions would cost. Reported: p50 and
// p99 per way, medians of the rounds.
func BenchmarkSyncFloor(b *testing.B) {
	const writers, perWriter, rounds = 8, 200, 5
	ways := []string{"own-file-fsync", "own-file-fdatasync", "own-file-fdatasync-prezeroed", "one-file-group-commit",
		"own-files-group-commit", "own-files-group-commit-sfr", "own-files-group-commit-parallel"}
	for range b.N {
		p50 := map[string][]time.Duration{}
		p99 := map[string][]time.Duration{}
		for range rounds {
			for _, way := range ways {
				lat := syncFloorRound(b, way, writers, perWriter)
				slices.Sort(lat)
				p50[way] = append(p50[way], lat[len(lat)/2])
				p99[way] = append(p99[way], lat[len(lat)*99/100])
			}
		}
		for _, way := range ways {
			slices.Sort(p50[way])
			slices.Sort(p99[way])
			b.ReportMetric(float64(p50[way][rounds/2].Microseconds()), way+"-p50-µs")
			b.ReportMetric(float64(p99[way][rounds/2].Microseconds()), way+"-p99-µs")
		}
		b.Logf("p50 per round: %v", p50)
	}
}

func syncFloorRound(b *testing.B, way string, writers, perWriter int) []time.Duration {
	dir := b.TempDir()
	rec := make([]byte, 110)
	files := make([]*os.File, writers)
	for i := range files {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if way == "own-file-fdatasync-prezeroed" {
			if _, err := f.WriteAt(make([]byte, writers*perWriter*len(rec)), 0); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		files[i] = f
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	// The shared file's group commit: a writer appends under mu, then
	// waits until a sync covers its record, leading one if none runs.
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	var written, synced int64
	syncing := false
	shared := func() error {
		mu.Lock()
		defer mu.Unlock()
		if _, err := files[0].Write(rec); err != nil {
			return err
		}
		written++
		mine := written
		for synced < mine {
			if syncing {
				cond.Wait()
				continue
			}
			syncing = true
			upTo := written
			mu.Unlock()
			err := files[0].Sync()
			mu.Lock()
			syncing = false
			cond.Broadcast()
			if err != nil {
				return err
			}
			synced = max(synced, upTo)
		}
		return nil
	}
	// One group commit over all the files: one writer at a time fsyncs
	// every file written since the last sync, one after another (with
	// sfr, after starting the writeback of all of them; with parallel,
	// all at once from goroutines of their own).
	w := make([]int64, writers)
	s := make([]int64, writers)
	multi := func(i int, f *os.File, off int64, sfr, parallel bool) error {
		mu.Lock()
		defer mu.Unlock()
		if _, err := f.WriteAt(rec, off); err != nil {
			return err
		}
		w[i]++
		mine := w[i]
		for s[i] < mine {
			if syncing {
				cond.Wait()
				continue
			}
			syncing = true
			var dirty []int
			var upTo []int64
			for j := range w {
				if w[j] > s[j] {
					dirty = append(dirty, j)
					upTo = append(upTo, w[j])
				}
			}
			mu.Unlock()
			var err error
			if parallel {
				errs := make([]error, len(dirty))
				var pw sync.WaitGroup
				for k, j := range dirty {
					pw.Go(func() { errs[k] = files[j].Sync() })
				}
				pw.Wait()
				err = errors.Join(errs...)
			}
			if sfr {
				for _, j := range dirty {
					if err = unix.SyncFileRange(int(files[j].Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE); err != nil {
						break
					}
				}
			}
			for _, j := range dirty {
				if err == nil && !parallel {
					err = files[j].Sync()
				}
			}
			mu.Lock()
			syncing = false
			cond.Broadcast()
			if err != nil {
				return err
			}
			for k, j := range dirty {
				s[j] = max(s[j], upTo[k])
			}
		}
		return nil
	}
	var lat []time.Duration
	var latMu sync.Mutex
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			f := files[i]
			var off int64
			mine := make([]time.Duration, 0, perWriter)
			for range perWriter {
				t0 := time.Now()
				var err error
				switch way {
				case "one-file-group-commit":
					err = shared()
				case "own-files-group-commit", "own-files-group-commit-sfr", "own-files-group-commit-parallel":
					err = multi(i, f, off, way == "own-files-group-commit-sfr", way == "own-files-group-commit-parallel")
					off += int64(len(rec))
				default:
					if _, err = f.WriteAt(rec, off); err != nil {
						break
					}
					off += int64(len(rec))
					if way == "own-file-fsync" {
						err = f.Sync()
					} else {
						err = unix.Fdatasync(int(f.Fd()))
					}
				}
				if err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			latMu.Lock()
			lat = append(lat, mine...)
			latMu.Unlock()
		})
	}
	wg.Wait()
	return lat
}
