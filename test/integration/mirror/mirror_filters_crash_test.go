package mirror

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// crashTopics is how many source topics the crash tests mirror.
const crashTopics = 40

func crashTopicName(i int) string { return fmt.Sprintf("auto-%02d", i) }

// logLines counts the JSON log lines of a broker process whose msg is msg.
func logLines(p *itest.BrokerProc, msg string) int {
	n := 0
	for _, line := range strings.Split(p.Output(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			n++
		}
	}
	return n
}

// partitionRecords reads a partition from its start to end (offsets and
// values), read_uncommitted: what the log holds.
func partitionRecords(t *testing.T, addr, topic string, p int32, end int64) []string {
	t.Helper()
	cl := itest.NewClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []string
	for int64(len(out)) < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s-%d on %s: read %d of %d records", topic, p, addr, len(out), end)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, fmt.Sprintf("%d:%s", r.Offset, r.Value)) })
	}
	return out
}

// assertSameRecords checks that every crash topic holds on dst exactly
// the source's records at the source's offsets: nothing duplicated,
// nothing lost.
func assertSameRecords(t *testing.T, a *minibrokertest.Cluster, dst string) {
	t.Helper()
	for i := 0; i < crashTopics; i++ {
		topic := crashTopicName(i)
		end := itest.LogEnd(a, topic, 0)
		itest.WaitFor(t, topic+" caught up on the restarted broker", func() bool {
			offs, err := itest.KadmClient(t, dst).ListEndOffsets(context.Background(), topic)
			if err != nil {
				return false
			}
			o, ok := offs.Lookup(topic, 0)
			return ok && o.Err == nil && o.Offset == end
		})
		want := partitionRecords(t, a.Addr(), topic, 0, end)
		got := partitionRecords(t, dst, topic, 0, end)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s on the mirror:\n  %v\nsource:\n  %v", topic, got, want)
		}
	}
}

// startCrashSource is a source with crashTopics topics of 5 records each.
func startCrashSource(t *testing.T) *minibrokertest.Cluster {
	t.Helper()
	var opts []minibrokertest.Option
	for i := 0; i < crashTopics; i++ {
		opts = append(opts, minibrokertest.TopicWithConfigs(crashTopicName(i), 1, map[string]string{
			"retention.ms": "3600000", "cleanup.policy": "delete"}))
	}
	a := minibrokertest.Start(t, opts...)
	for i := 0; i < crashTopics; i++ {
		itest.ProduceTo(t, a.Addr(), crashTopicName(i), "v", 5)
	}
	return a
}

// createAutoMirrorCLI creates, with the CLI, mirror from-a on b following
// the source's auto-.* topics with a 100 ms metadata refresh.
func createAutoMirrorCLI(t *testing.T, b *itest.BrokerProc, source string) {
	t.Helper()
	itest.MustCLIOn(t, b, "mirror", "create", "from-a", "--source", source,
		"--mirror-config", mirror.SettingTopicsInclude+"=auto-.*",
		"--mirror-config", mirror.SettingMetadataRefreshMs+"=100")
}

// killMidway SIGKILLs b once its log has at least n lines containing
// line (one per topic), and fails unless it died before every one of the
// crashTopics topics had its line.
func killMidway(t *testing.T, b *itest.BrokerProc, line string, n int) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); logLines(b, line) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d %q lines in 60 s\n%s", n, line, b.Output())
		}
	}
	b.Stop(t, syscall.SIGKILL)
	done := logLines(b, line)
	if done >= crashTopics {
		t.Fatalf("all %d topics logged %q before the kill: the test did not crash mid-way", done, line)
	}
	t.Logf("killed after %d of %d topics logged %q", done, crashTopics, line)
}

// TestBinaryKill9DuringMirrorAutoCreation: the built destination is killed
// (SIGKILL) while `mirror start` without topics creates the topics its
// filters select, after some of them. The restarted broker finishes:
// every topic is mirrored once, its records at the source's offsets and
// nothing twice, none is left out as "exists locally" (a topic created
// just before the kill is the mirror's, recorded before it was created).
func TestBinaryKill9DuringMirrorAutoCreation(t *testing.T) {
	t.Parallel()
	a := startCrashSource(t)
	dir := t.TempDir()
	b := itest.StartBinary(t, dir)
	createAutoMirrorCLI(t, b, a.Addr())
	go itest.RunCLI(t, "mirror", "start", "from-a", "--admin="+b.HttpAddr) // killed: no answer
	killMidway(t, b, "mirroring topic", 8)

	b2 := itest.StartBinary(t, dir)
	assertSameRecords(t, a, b2.Addr)
	var st mirror.Status
	itest.Must(t, "describe", json.Unmarshal([]byte(itest.MustCLIOn(t, b2, "mirror", "describe", "from-a", "--json")), &st))
	if len(st.SkippedTopics) != 0 || !st.AutoTopics {
		t.Fatalf("after restart: auto %v, skipped %v", st.AutoTopics, st.SkippedTopics)
	}
	if len(st.Partitions) != crashTopics {
		t.Fatalf("%d partitions mirrored, want %d", len(st.Partitions), crashTopics)
	}
	for _, p := range st.Partitions {
		if p.State != mirror.Mirroring {
			t.Fatalf("after restart: %+v", p)
		}
	}
}

// TestBinaryKill9DuringMirrorConfigSync: the built destination is killed
// (SIGKILL) while the refresh copies changed configs of every topic (one
// override changed, one removed at the source), after some topics. The
// restarted broker finishes the sync (the removed override is removed
// too, though the process died after noting it and before removing it on
// some topics) and the records are the source's, nothing twice.
func TestBinaryKill9DuringMirrorConfigSync(t *testing.T) {
	t.Parallel()
	a := startCrashSource(t)
	dir := t.TempDir()
	b := itest.StartBinary(t, dir)
	createAutoMirrorCLI(t, b, a.Addr())
	itest.MustCLIOn(t, b, "mirror", "start", "from-a")
	assertSameRecords(t, a, b.Addr)

	adm := itest.KadmClient(t, a.Addr())
	var topics []string
	for i := 0; i < crashTopics; i++ {
		topics = append(topics, crashTopicName(i))
	}
	resp, err := adm.AlterTopicConfigs(context.Background(), []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: itest.KmsgStr("7200000")},
		{Op: kadm.DeleteConfig, Name: "cleanup.policy"},
	}, topics...)
	itest.Must(t, "alter", err)
	for _, r := range resp {
		itest.Must(t, "alter "+r.Name, r.Err)
	}
	killMidway(t, b, "topic configs synced from source", 5)

	b2 := itest.StartBinary(t, dir)
	for _, topic := range topics {
		itest.WaitFor(t, topic+" configs synced after restart", func() bool {
			got := itest.DescribeTopicConfigs(t, b2.Addr, topic)
			_, cp := got["cleanup.policy"]
			return got["retention.ms"] == "7200000" && !cp
		})
	}
	assertSameRecords(t, a, b2.Addr)
}
