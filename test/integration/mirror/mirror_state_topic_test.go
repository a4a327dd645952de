package mirror

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/itopic"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/mirror/staterec"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorStateTopic: the mirrors' state is in the
// internal topic __mirror_state. A kgo consumer reads it (a definition
// record for the mirror, one record per mirrored partition, in
// minibroker's layout: internal/mirror/staterec); dump-log
// --mirror-state-decoder prints them as kafka-dump-log's decoders print
// theirs, the state of each partition in its payload; the mirror's
// deletion leaves tombstones (<DELETE>), and a restart finds no mirror.
func TestMirrorStateTopic(t *testing.T) {
	t.Parallel()
	src := minibrokertest.Start(t, minibrokertest.Topic("orders", 2))
	c := minibrokertest.Start(t)
	m := c.Mirror("m", src.Addr()).Start("orders")
	m.WaitCaughtUp(30 * time.Second)
	m.Stop()

	keys := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.ConsumeTopics("__mirror_state"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for !keys[string(staterec.PartitionKey("m", "orders", 1))] || !keys[string(staterec.DefinitionKey("m"))] {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consuming __mirror_state: %v (%d keys read)", err, len(keys))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, err := staterec.DecodeKey(r.Key); err != nil {
				t.Errorf("record at %d: %v", r.Offset, err)
			}
			keys[string(r.Key)] = true
		})
	}

	if err := c.Broker().Mirrors().Delete("m"); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(c.DataDir(), "__mirror_state-0", "00000000000000000000.log")
	out, errOut, code := itest.RunTool(t, "dump-log", "--mirror-state-decoder", seg)
	if code != 0 {
		t.Fatalf("dump-log: exit %d\n%s\n%s", code, out, errOut)
	}
	part := `key: {"type":"1001","data":{"mirror":"m","topic":"orders","partition":1}}`
	def := `key: {"type":"1000","data":{"mirror":"m"}}`
	for _, want := range []string{
		def + ` payload: {"version":"0","data":{"name":"m","source":["` + src.Addr() + `"]`,
		part + ` payload: {"version":"0","data":{"state":"MIRRORING"`,
		part + ` payload: {"version":"0","data":{"state":"STOPPED"`,
		part + " payload: <DELETE>",
		def + " payload: <DELETE>",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("dump-log --mirror-state-decoder lacks %q:\n%s", want, out)
		}
	}
	c.Restart()
	if names := c.Broker().Mirrors().List(); len(names) != 0 {
		t.Fatalf("after the delete and a restart: mirrors %v", names)
	}
}

// mirrorStateSegments is the bytes of the data dir's __mirror_state-0
// segments, in offset order: where the mirrors' state is on disk.
func mirrorStateSegments(t *testing.T, dataDir string) []byte {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dataDir, mirror.StateTopicName+"-0", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(segs)
	var all []byte
	for _, s := range segs {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// mirrorStateOnDisk is the last value of each key of a stopped broker's
// __mirror_state (tombstones removed): the mirrors' state as the next
// start reads it.
func mirrorStateOnDisk(t *testing.T, dataDir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	it := batch.NewIter(mirrorStateSegments(t, dataDir))
	for {
		b, h, ok := it.Next()
		if !ok {
			break
		}
		section, ok := batch.RecordsSection(b)
		if h.IsControl() || !ok {
			continue
		}
		itopic.EachRecord(section, h.NumRecords, func(key, value []byte) {
			if value == nil {
				delete(out, string(key))
			} else {
				out[string(key)] = bytes.Clone(value)
			}
		})
	}
	return out
}
