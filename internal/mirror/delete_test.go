package mirror_test

import (
	"errors"
	"testing"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/minibrokertest"
)

// deleteDuringStart deletes the mirror from inside a start, after the
// start looked the mirror up and created the topic locally, before it
// records the partitions: the interleaving of an admin delete with a start
// (or a refresh's start of a new topic) that a loaded machine can produce.
type deleteDuringStart struct {
	mirror.NoTestHooks
	m         *mirror.Manager
	deleteErr error
}

func (h *deleteDuringStart) AfterLocalTopicCreate(string) error {
	h.deleteErr = h.m.Delete("m")
	return nil
}

// A delete that lands in the middle of a start wins: the start answers
// not found, records no partition, starts no fetcher (TestMain's goleak
// finds one left running) and leaves the local partition writable. Before,
// the start recorded PREPARING partitions on the deleted mirror and started
// a fetcher nothing would stop, the partition stayed read-only under a
// mirror that no longer existed, and Delete read the mirror's topic maps
// after releasing the lock while the start wrote them (go test -race).
func TestDeleteDuringStart(t *testing.T) {
	src := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	l := &local{dir: t.TempDir(), parts: map[string][]*partition.Partition{}}
	defer l.close()
	hooks := &deleteDuringStart{}
	m, err := openManager(l, mirror.WithTestHooks(mirror.Options{}, hooks))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	hooks.m = m
	if err := m.Create("m", []string{src.Addr()}, ""); err != nil {
		t.Fatal(err)
	}
	err = m.Start(t.Context(), "m", []string{"orders"})
	if hooks.deleteErr != nil {
		t.Fatalf("delete during the start: %v", hooks.deleteErr)
	}
	if !errors.Is(err, mirror.ErrNotFound) {
		t.Fatalf("start of a mirror deleted meanwhile: %v, want not found", err)
	}
	if mode, owner := l.Partitions("orders")[0].Mode(); mode != partition.Writable {
		t.Fatalf("orders-0 is %v (owner %q) after its mirror was deleted, want writable", mode, owner)
	}
	if _, err := m.Describe("m"); !errors.Is(err, mirror.ErrNotFound) {
		t.Fatalf("describe after delete: %v", err)
	}
}
