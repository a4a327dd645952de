package mirror_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorLocksIndependent (each mirror has its own lock): two
// mirrors a and b of one Manager. While a save of a's state is held (the
// knob holds it as a slow fsync would, with a's lock and the store's),
// describing b answers: b's work takes b's lock only. A describe of a
// waits for a's save, as it must (a change is not seen before it is
// persisted). Negative control (SetOneLock: one lock for every mirror, as
// the Manager's single mutex was): describing b waits for a's save.
func TestMirrorLocksIndependent(t *testing.T) {
	for _, oneLock := range []bool{false, true} {
		t.Run(fmt.Sprintf("oneLock=%v", oneLock), func(t *testing.T) {
			src := minibrokertest.Start(t, minibrokertest.Topic("ta", 1), minibrokertest.Topic("tb", 1))
			produce(t, src.Addr(), "ta", 2)
			produce(t, src.Addr(), "tb", 2)
			l := &local{dir: t.TempDir(), parts: map[string][]*partition.Partition{}}
			t.Cleanup(l.close)
			m, err := openManager(l, mirror.Options{FetchMaxWait: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(m.Close)
			if oneLock {
				mirror.SetOneLock(m)
			}
			var hold atomic.Bool
			held, release := make(chan struct{}, 1), make(chan struct{})
			mirror.SetBeforeSave(m, func(name string) {
				if name == "a" && hold.CompareAndSwap(true, false) {
					held <- struct{}{}
					<-release
				}
			})
			for _, mt := range [][2]string{{"a", "ta"}, {"b", "tb"}} {
				if err := m.Create(mt[0], []string{src.Addr()}, ""); err != nil {
					t.Fatal(err)
				}
				if err := m.Start(t.Context(), mt[0], []string{mt[1]}); err != nil {
					t.Fatal(err)
				}
				waitEnd(t, l, mt[1], 2)
			}
			hold.Store(true)
			paused := make(chan error, 1)
			go func() { paused <- m.Pause("a", nil) }()
			select {
			case <-held:
			case <-time.After(20 * time.Second):
				t.Fatal("a's pause never saved")
			}
			describe := func(name string) chan error {
				ch := make(chan error, 1)
				go func() { _, err := m.Describe(name); ch <- err }()
				return ch
			}
			db, da := describe("b"), describe("a")
			wait := 20 * time.Second
			if oneLock {
				wait = time.Second
			}
			select {
			case err := <-db:
				if oneLock {
					t.Fatal("negative control: describing b answered while a's save was held")
				}
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(wait):
				if !oneLock {
					t.Fatal("describing b waited for a's save")
				}
			}
			select {
			case <-da:
				t.Fatal("describing a answered while a's save was held")
			default:
			}
			close(release)
			if err := <-paused; err != nil {
				t.Fatal(err)
			}
			if err := <-da; err != nil {
				t.Fatal(err)
			}
			if oneLock {
				if err := <-db; err != nil {
					t.Fatal(err)
				}
			}
			if st, err := m.Describe("a"); err != nil || st.Partitions[0].State != mirror.Paused {
				t.Fatalf("a after the pause: %+v %v", st.Partitions, err)
			}
		})
	}
}
