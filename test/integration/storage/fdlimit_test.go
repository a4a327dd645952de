//go:build linux

package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// TestFileLimitBinary runs the built binary out of file descriptors (its
// RLIMIT_NOFILE lowered with prlimit(2) once it serves), as a broker with
// many partitions meets them, and checks it behaves as Kafka users expect:
//
//  1. A CreateTopics that does not fit answers KAFKA_STORAGE_ERROR and
//     leaves nothing (no topic, no partition directory, no file
//     descriptor); the same topic is created once others are deleted.
//  2. The same for CreatePartitions: the topic keeps its partitions.
//  3. With every descriptor in use, accept(2) fails (EMFILE): the broker
//     neither spins nor exits, connections it has keep producing and
//     consuming, and a connection waiting in the backlog is served once
//     descriptors are free again.
//  4. After all that, a restart with the usual limit has every
//     acknowledged record, and verify-log finds nothing.
func TestFileLimitBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := itest.StartBinary(t, dir)
	pid := p.Cmd.Process.Pid
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	adm := itest.NewClient(t, p.Addr)
	itest.CreateTopic(t, ctx, adm, "keep", 4)
	prod := itest.NewClient(t, p.Addr, kgo.DefaultProduceTopic("keep"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	cons := itest.NewClient(t, p.Addr, kgo.ConsumeTopics("keep"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.FetchMaxWait(100*time.Millisecond))
	acked := map[string]int{} // value → count of acknowledgements
	produced := 0
	produce := func(topic string, n int) {
		t.Helper()
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s-%05d", topic, produced))}
			produced++
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
		for _, r := range recs {
			acked[string(r.Value)]++
		}
	}
	consumed := map[string]bool{}
	consumeAcked := func(stage string) {
		t.Helper()
		for len(consumed) < len(acked) {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: consumed %d of %d acknowledged records", stage, len(consumed), len(acked))
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("%s: fetch %s/%d: %v", stage, topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) { consumed[string(r.Value)] = true })
		}
	}
	produce("keep", 200)
	consumeAcked("before the limit")

	// Descriptors one partition holds, measured (three today: log, offset
	// and time index; fewer once indexes open lazily).
	before := fdCount(t, pid)
	itest.CreateTopic(t, ctx, adm, "probe", 10)
	perPartition := (fdCount(t, pid) - before + 9) / 10
	deleteTopic(t, ctx, adm, "probe")
	if perPartition < 1 {
		t.Fatalf("%d descriptors per partition", perPartition)
	}
	// Room for 60 more partitions and a few connections: hog (40) fits,
	// huge (40) does not beside it, but fits alone; huge cannot grow to 100.
	limit := uint64(fdCount(t, pid) + 60*perPartition + 8)
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	t.Logf("%d descriptors per partition, RLIMIT_NOFILE %d", perPartition, limit)

	// 1. CreateTopics that does not fit.
	itest.CreateTopic(t, ctx, adm, "hog", 40)
	before = fdCount(t, pid)
	if err := itest.CreateTopicErr(ctx, adm, "huge", 40); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("CreateTopics beyond the file limit: %v, want KAFKA_STORAGE_ERROR\n%s", err, p.Output())
	}
	if after := fdCount(t, pid); after > before {
		t.Fatalf("the failed CreateTopics leaked %d descriptors", after-before)
	}
	checkTopics(t, ctx, adm, map[string]int{"keep": 4, "hog": 40}, "after the failed CreateTopics")
	checkPartitionDirs(t, dir, map[string]int{"keep": 4, "hog": 40}, "after the failed CreateTopics")
	produce("keep", 100)
	consumeAcked("after the failed CreateTopics")
	deleteTopic(t, ctx, adm, "hog")
	itest.CreateTopic(t, ctx, adm, "huge", 40)
	cons.AddConsumeTopics("huge")
	produce("huge", 100)
	consumeAcked("after creating huge")

	// 2. CreatePartitions that does not fit.
	before = fdCount(t, pid)
	if err := createPartitionsErr(ctx, adm, "huge", 100); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("CreatePartitions beyond the file limit: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if after := fdCount(t, pid); after > before {
		t.Fatalf("the failed CreatePartitions leaked %d descriptors", after-before)
	}
	checkTopics(t, ctx, adm, map[string]int{"keep": 4, "huge": 40}, "after the failed CreatePartitions")
	checkPartitionDirs(t, dir, map[string]int{"keep": 4, "huge": 40}, "after the failed CreatePartitions")
	produce("huge", 100)
	consumeAcked("after the failed CreatePartitions")

	// 3. Every descriptor in use: new connections until accept(2) fails.
	// A connection is waiting when the broker holds every descriptor it
	// may and has not answered it (a descriptor in use for a moment can
	// make that look so: then it is answered soon and counts as held).
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	var waiting <-chan struct{} // answered when the broker accepts the connection it could not
	for waiting == nil {
		if len(held) > int(limit) {
			t.Fatalf("%d connections held and accept has not failed", len(held))
		}
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		answered := sendAPIVersions(t, c)
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("connection %d neither served nor waiting\n%s", len(held), p.Output())
			}
			select {
			case <-answered:
			default:
				if fdCount(t, pid) < int(limit) {
					continue
				}
				select {
				case <-answered:
				case <-time.After(300 * time.Millisecond):
					waiting = answered
					held = held[:len(held)-1]
					defer c.Close()
				}
			}
			break
		}
	}
	t.Logf("accept fails after %d more connections", len(held))
	if !strings.Contains(p.Output(), "accept4: too many open files") {
		t.Errorf("accept failing with EMFILE not logged")
	}
	cpu, logged := cpuTicks(t, pid), strings.Count(p.Output(), `"accept failed"`)
	time.Sleep(time.Second)
	if used := cpuTicks(t, pid) - cpu; used > 50 { // clock ticks: 100 a second is one core
		t.Errorf("the broker used %d%% of a core in a second out of descriptors: the accept loop spins", used)
	}
	if n := strings.Count(p.Output(), `"accept failed"`) - logged; n > 0 {
		t.Errorf("%d more accept failures logged in a second: a log line per attempt", n)
	}
	select {
	case err := <-p.Exited:
		t.Fatalf("the broker exited out of descriptors: %v\n%s", err, p.Output())
	default:
	}
	produce("keep", 100)
	produce("huge", 100)
	consumeAcked("with accept failing")
	for _, c := range held {
		c.Close()
	}
	held = nil
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatalf("the connection waiting in the backlog was not served once descriptors were free\n%s", p.Output())
	}
	fresh := itest.NewClient(t, p.Addr)
	checkTopics(t, ctx, fresh, map[string]int{"keep": 4, "huge": 40}, "on a new connection")

	// 4. A restart with the usual limit.
	prod.Close()
	cons.Close()
	adm.Close()
	fresh.Close()
	if err := p.Stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, p.Output())
	}
	p2 := itest.StartBinary(t, dir)
	checkPartitionDirs(t, dir, map[string]int{"keep": 4, "huge": 40}, "after the restart")
	seen := map[string]int{}
	for _, topic := range []string{"keep", "huge"} {
		n := 0
		for v := range acked {
			if strings.HasPrefix(v, topic+"-") {
				n++
			}
		}
		for _, r := range itest.ConsumeAll(t, p2.Addr, topic, n) {
			seen[string(r.Value)]++
		}
	}
	for v := range acked {
		if seen[v] != 1 {
			t.Errorf("acknowledged %s read %d times after the restart", v, seen[v])
		}
	}
	if len(seen) != len(acked) {
		t.Errorf("%d records after the restart, %d acknowledged", len(seen), len(acked))
	}
	if err := p2.Stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"verify-log"}
	for _, e := range entries {
		if e.IsDir() && partitionDirName.MatchString(e.Name()) {
			args = append(args, filepath.Join(dir, e.Name()))
		}
	}
	if out, errOut, code := itest.RunTool(t, args...); code != 0 {
		t.Errorf("verify-log: exit %d\n%s%s", code, out, errOut)
	}
}

func fdCount(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// cpuTicks is the user and system time pid used, in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name, which is in parentheses.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.Atoi(fields[11])
	stime, _ := strconv.Atoi(fields[12])
	return utime + stime
}

// sendAPIVersions writes an ApiVersions v0 request on c; the channel is
// closed when its response has arrived.
func sendAPIVersions(t *testing.T, c net.Conn) <-chan struct{} {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	b := []byte{0, 0, 0, 0, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0} // size, key 18, v0, correlation 1, no client id
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err == nil {
			io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:])))
			close(done)
		}
	}()
	return done
}

func createPartitionsErr(ctx context.Context, cl *kgo.Client, topic string, count int32) error {
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Topics[0].ErrorCode)
}

func deleteTopic(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) {
	t.Helper()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{topic}
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = &topic
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("delete %s: %v", topic, err)
	}
}

// checkTopics asks Metadata for every topic and compares partition counts.
func checkTopics(t *testing.T, ctx context.Context, cl *kgo.Client, want map[string]int, stage string) {
	t.Helper()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("%s: metadata: %v", stage, err)
	}
	got := map[string]int{}
	for _, tp := range resp.Topics {
		if tp.IsInternal {
			continue // __consumer_offsets, __transaction_state: made at start-up
		}
		got[*tp.Topic] = len(tp.Partitions)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: topics %v, want %v", stage, got, want)
	}
}

var partitionDirName = regexp.MustCompile(`^(.+)-([0-9]+)$`)

// checkPartitionDirs checks the data directory holds exactly the
// partition directories of want.
func checkPartitionDirs(t *testing.T, dir string, want map[string]int, stage string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range entries {
		m := partitionDirName.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil || m[1] == "__consumer_offsets" || m[1] == "__transaction_state" || m[1] == "__mirror_state" || m[1] == "__share_group_state" {
			continue
		}
		if n, _ := strconv.Atoi(m[2]); n >= want[m[1]] {
			t.Errorf("%s: partition directory %s left", stage, e.Name())
		}
		got[m[1]]++
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: partition directories %v, want %v", stage, got, want)
	}
}
