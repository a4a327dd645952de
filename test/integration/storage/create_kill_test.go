package storage

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cutDirs counts the partition directories of topic "cut" in dir.
func cutDirs(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "cut-") {
			n++
		}
	}
	return n
}

// The built binary is killed (SIGKILL) while a CreateTopics of 3,000
// partitions runs, at two points. The kill leaves partition directories
// that no topic lists (shown before the restart: without the start-up
// sweep they would stay); the restarted broker removes every one,
// logging each, and has no such topic.
func TestBinaryKill9DuringCreateTopics(t *testing.T) {
	t.Parallel()
	for _, killAfter := range []int{20, 600} {
		dir := t.TempDir()
		p := itest.StartBinary(t, dir)
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.TimeoutMillis = 120000
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "cut", 3000, 1
			req.Topics = append(req.Topics, rt)
			req.RequestWith(context.Background(), cl) // killed: no answer
		}()
		for deadline := time.Now().Add(60 * time.Second); cutDirs(t, dir) < killAfter; time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("only %d directories after 60 s", cutDirs(t, dir))
			}
		}
		p.Stop(t, syscall.SIGKILL)
		cl.Close()
		orphans := cutDirs(t, dir)
		if orphans < killAfter {
			t.Fatalf("%d orphan directories after the kill, want at least %d (the control)", orphans, killAfter)
		}
		p2 := itest.StartBinary(t, dir)
		if n := cutDirs(t, dir); n != 0 {
			t.Fatalf("%d directories of the interrupted topic after restart", n)
		}
		// Each removal is logged (the logger samples repeated lines past
		// 100 a second), then their count.
		out := p2.Output()
		if !strings.Contains(out, "removed an orphan partition directory") || !strings.Contains(out, `"count":`+strconv.Itoa(orphans)) {
			t.Errorf("removals not logged with their count %d:\n%s", orphans, itest.LastLines(out, 5))
		}
		cl2 := itest.NewClient(t, p2.Addr)
		req := kmsg.NewPtrMetadataRequest()
		topic := "cut"
		req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: &topic})
		req.AllowAutoTopicCreation = false
		resp, err := req.RequestWith(context.Background(), cl2)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode == 0 {
			t.Fatalf("the interrupted topic exists after restart: %+v", resp.Topics)
		}
		t.Logf("killed after %d directories: %d orphans, all removed at restart", killAfter, orphans)
		p2.Stop(t, syscall.SIGTERM)
	}
}
