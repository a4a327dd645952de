// Helpers shared by the integration tests (clients, binaries, raw
// connections, mirrored clusters). The rule each test proves is mapped in
// doc.go.

package itest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/broker"
	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/minibrokertest"
)

// RawLog returns a partition's log bytes in [from, to).
func RawLog(t *testing.T, c Node, topic string, p int32, from, to int64) []byte {
	t.Helper()
	part, ok := c.Broker().Partition(topic, p)
	if !ok {
		t.Fatalf("no partition %s-%d", topic, p)
	}
	var out []byte
	for from < to {
		raw, err := part.ReadRaw(from, to, 1<<20)
		if err != nil {
			t.Fatalf("read %s-%d at %d: %v", topic, p, from, err)
		}
		if len(raw) == 0 {
			break
		}
		it := batch.NewIter(raw)
		for b, h, ok := it.Next(); ok; b, h, ok = it.Next() {
			out = append(out, b...)
			from = h.LastOffset() + 1
		}
	}
	return out
}

// BatchesOf lists the headers of a partition's batches in [from, to).
func BatchesOf(t *testing.T, c Node, topic string, p int32, from, to int64) ([]batch.Header, [][]byte) {
	t.Helper()
	raw := RawLog(t, c, topic, p, from, to)
	var hs []batch.Header
	var bs [][]byte
	it := batch.NewIter(raw)
	for b, h, ok := it.Next(); ok; b, h, ok = it.Next() {
		hs = append(hs, h)
		bs = append(bs, b)
	}
	return hs, bs
}

// Barriers returns the offsets of MIRROR_PID_RESET batches in a partition.
func Barriers(t *testing.T, c Node, topic string, p int32) []int64 {
	t.Helper()
	part, _ := c.Broker().Partition(topic, p)
	hs, bs := BatchesOf(t, c, topic, p, part.Offsets().LogStart, part.Offsets().LogEnd)
	var out []int64
	for i := range hs {
		if batch.IsBarrier(&hs[i], bs[i]) {
			out = append(out, hs[i].BaseOffset)
		}
	}
	return out
}

// AssertIdentical checks two clusters hold the same bytes for a partition
// in [0, upTo).
func AssertIdentical(t *testing.T, a, b Node, topic string, p int32, upTo int64) {
	t.Helper()
	ra, rb := RawLog(t, a, topic, p, 0, upTo), RawLog(t, b, topic, p, 0, upTo)
	if len(ra) == 0 {
		t.Fatalf("%s-%d: nothing to compare below %d", topic, p, upTo)
	}
	if !bytes.Equal(ra, rb) {
		t.Fatalf("%s-%d: logs differ below offset %d (%d vs %d bytes)", topic, p, upTo, len(ra), len(rb))
	}
}

// ProduceSerially produces one record per ProduceSync call (one batch per
// record), so batch shapes are the same on every run.
func ProduceSerially(t *testing.T, cl *kgo.Client, topic string, p int32, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatalf("produce %s-%d: %v", prefix, i, err)
		}
	}
}

// IdempotentProducer is a kgo producer writing to explicit partitions.
func IdempotentProducer(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	return NewClient(t, addr, append([]kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
}

// ReadValues reads a partition (read_committed) from offset to its end and
// returns the record values. Control batches (markers, barriers) are
// invisible to the consumer, so the end is reached when the high
// watermark has been seen and a further poll stays empty.
func ReadValues(t *testing.T, addr, topic string, p int32, from int64) []string {
	t.Helper()
	cl := NewClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
	adm := NewClient(t, addr)
	end := EndOffset(t, adm, topic, p)
	var out []string
	deadline := time.Now().Add(20 * time.Second)
	sawEnd := false
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)); n++ })
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.HighWatermark >= end {
				sawEnd = true
			}
		})
		if sawEnd && n == 0 {
			return out
		}
	}
	t.Fatalf("reading %s-%d from %d: got %d values, never reached end %d", topic, p, from, len(out), end)
	return nil
}

// BrokerOptions are what an in-process broker started by StartBroker has
// beyond minibrokertest's options: the internal seams no user reaches.
type BrokerOptions struct {
	// Dir is the data directory (t.TempDir() when empty).
	Dir string
	// HTTP turns the admin HTTP listener on, on a free port.
	HTTP bool
	// Config changes the settings after RawConfig's.
	Config func(*config.Config)
	// Mirror is the mirrors' options, their test hooks included
	// (set with mirror.WithTestHooks, the mirror package's one test seam).
	Mirror mirror.Options
	// Hooks are the broker's test hooks (broker.WithTestHooks, the
	// broker package's one test seam: the share coordinator's negative
	// controls).
	Hooks broker.TestHooks
	// FS is the file system storage writes through (the OS's when nil).
	FS vfs.FS
	// Registry receives the broker's metrics (its own when nil).
	Registry *prometheus.Registry
}

// RawCluster is a broker started with internal options (test seams that
// minibrokertest does not offer its users).
type RawCluster struct {
	T    *testing.T
	Cfg  config.Config
	B    *broker.Broker
	Opts BrokerOptions
}

// StartBroker is the one way the integration tests start an in-process
// broker with internal options (tests that need none use
// minibrokertest.Start): loopback on a free port, closed at the test's
// end.
func StartBroker(t *testing.T, o BrokerOptions) *RawCluster {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	r := &RawCluster{T: t, Cfg: RawConfig(o.Dir), Opts: o}
	if o.HTTP {
		r.Cfg.HTTPListen = "127.0.0.1:0"
	}
	if o.Config != nil {
		o.Config(&r.Cfg)
	}
	r.Start(o.Mirror)
	t.Cleanup(func() {
		r.checkDefects()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.B.Close(ctx)
	})
	return r
}

// checkDefects fails the test when the broker recovered a panic in a
// request handler or met another defect (broker.Defects), as
// minibrokertest's clusters do when they stop: a recovered panic answers
// the client with an error, so a test that only reads answers would not
// see it.
func (r *RawCluster) checkDefects() {
	r.T.Helper()
	if d := r.B.Defects(); len(d) > 0 {
		r.T.Errorf("itest: the broker met defects (a minibroker bug):\n  %s", strings.Join(d, "\n  "))
	}
}

// NoBarrier is the mirror options of the negative control whose mirrors
// leave the barrier out.
func NoBarrier() mirror.Options {
	return mirror.WithTestHooks(mirror.Options{}, MirrorHooks{NoBarrier: true})
}

// RawConfig is a raw cluster's configuration: loopback on a free port, no
// admin HTTP listener, groups that form at once (as minibrokertest's).
func RawConfig(dir string) config.Config {
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.Listen = "127.0.0.1:0"
	cfg.HTTPListen = ""
	cfg.Kafka["group.initial.rebalance.delay.ms"] = "0"
	return cfg
}

// Start starts the broker on r.Cfg with mopts (and r.Opts' file system,
// registry and test hooks); restarts keep the port.
func (r *RawCluster) Start(mopts mirror.Options) {
	r.T.Helper()
	opts := broker.Options{Config: r.Cfg, Logger: zap.NewNop(), Mirror: mopts, FS: r.Opts.FS, Registry: r.Opts.Registry}
	b, err := broker.New(broker.WithTestHooks(opts, r.Opts.Hooks))
	if err != nil {
		r.T.Fatal(err)
	}
	b.Serve()
	r.B = b
	r.Cfg.Listen = b.Addr() // restarts keep the port
}

// CrashAndRestart kills the broker (no clean shutdown) and starts it again
// on the same data and port with mopts.
func (r *RawCluster) CrashAndRestart(mopts mirror.Options) {
	r.T.Helper()
	r.checkDefects()
	r.B.Kill()
	r.Start(mopts)
}

func (r *RawCluster) Broker() *broker.Broker { return r.B }
func (r *RawCluster) Addr() string           { return r.B.Addr() }

// Node is a running broker under test: a minibrokertest.Cluster or a
// rawCluster.
type Node interface {
	Broker() *broker.Broker
	Addr() string
}

var _ Node = (*minibrokertest.Cluster)(nil)

// EndOffset is a partition's high watermark.
func EndOffset(t *testing.T, cl *kgo.Client, topic string, p int32) int64 {
	t.Helper()
	offs, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, p)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s-%d: %v", topic, p, o.Err)
	}
	return o.Offset
}

// MirrorOn returns the broker's mirror manager.
func MirrorOn(n Node) *mirror.Manager { return n.Broker().Mirrors() }

// SegmentFiles lists a partition's segment files and their sizes.
func SegmentFiles(t *testing.T, dataDir, topic string, p int) map[string]int64 {
	t.Helper()
	dir := filepath.Join(dataDir, topic+"-"+strconv.Itoa(p))
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = fi.Size()
		}
	}
	return out
}

// MinibrokerBinary builds cmd/minibroker once per test run.
func MinibrokerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "minibroker-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "minibroker")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/minibroker/minibroker/cmd/minibroker").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// StartBinary runs `minibroker serve` on dataDir with free ports and waits
// for its "serving" log line.
func StartBinary(t *testing.T, dataDir string, extra ...string) *BrokerProc {
	t.Helper()
	args := append([]string{"serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0",
		"--http-listen", "127.0.0.1:0", "--log-format", "json"}, extra...)
	return StartBinaryWith(t, nil, args...)
}

// StartBinaryWith runs the binary with exactly these arguments, env added
// to the test's environment, and waits for its "serving" log line (the
// command must log JSON).
func StartBinaryWith(t *testing.T, env []string, args ...string) *BrokerProc {
	t.Helper()
	cmd := exec.Command(MinibrokerBinary(t), args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &BrokerProc{Cmd: cmd, Exited: make(chan error, 1), logs: &strings.Builder{}, logMu: &sync.Mutex{}}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.logMu.Lock()
			p.logs.WriteString(line + "\n")
			p.logMu.Unlock()
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "serving" {
				p.Addr, _ = m["advertised"].(string)
				p.HttpAddr, _ = m["http"].(string)
				close(ready)
			}
		}
		p.Exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		select {
		case <-p.Exited:
		case <-time.After(5 * time.Second):
		}
	})
	select {
	case <-ready:
	case err := <-p.Exited:
		t.Fatalf("broker exited before serving: %v\n%s", err, p.Output())
	case <-time.After(20 * time.Second):
		t.Fatalf("broker did not start\n%s", p.Output())
	}
	return p
}

func HttpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

func Must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Metric returns one series' value from /metrics, "" when absent.
func Metric(t *testing.T, httpAddr, series string) string {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func KadmClient(t *testing.T, addr string, opts ...kgo.Opt) *kadm.Client {
	t.Helper()
	return kadm.NewClient(NewClient(t, addr, opts...))
}

// KadmMetadata asks a new client, so nothing comes from kgo's metadata
// cache (kadm answers from it for up to MetadataMinAge).
func KadmMetadata(t *testing.T, addr string, topics ...string) kadm.Metadata {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := KadmClient(t, addr).Metadata(ctx, topics...)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	return md
}

// KcatBinary finds kcat (librdkafka's command-line client). It is a
// required test dependency, never a silent skip: `make deps` installs it.
func KcatBinary(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat is not on PATH (%v): run `make deps` (apt-get install kcat) before the integration tests", err)
	}
	return path
}

// RunKcat runs kcat with args and stdin, within a timeout, and returns
// its standard output and error. A non-zero exit fails the test.
func RunKcat(t *testing.T, stdin string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, KcatBinary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v (context: %v)\nstderr:\n%s", strings.Join(args, " "), err, ctx.Err(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// LibrdkafkaVersion is the librdkafka version kcat -V reports.
func LibrdkafkaVersion(t *testing.T) string {
	out, _ := RunKcat(t, "", "-V")
	if _, v, ok := strings.Cut(out, "librdkafka "); ok {
		return strings.Fields(v)[0]
	}
	return "unknown"
}

func NewClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// ConsumeAll reads a topic from the start until n records arrived.
func ConsumeAll(t *testing.T, addr, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := NewClient(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// RunCLI runs the built binary and returns its combined output.
func RunCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(MinibrokerBinary(t), args...).CombinedOutput()
	return string(out), err
}

func MustPartition(t *testing.T, n Node, topic string, p int32) *partition.Partition {
	t.Helper()
	part, ok := n.Broker().Partition(topic, p)
	if !ok {
		t.Fatalf("no %s-%d", topic, p)
	}
	return part
}

func WaitMirrored(t *testing.T, src, dst Node, topic string, parts int32) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for p := int32(0); p < parts; p++ {
		sp, _ := src.Broker().Partition(topic, p)
		for {
			dp, ok := dst.Broker().Partition(topic, p)
			if ok && dp.Offsets().HighWatermark >= sp.Offsets().LastStable {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s-%d not mirrored: source LSO %d", topic, p, sp.Offsets().LastStable)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// Values builds "prefix-0" … "prefix-(n-1)".
func Values(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

func Concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func AssertValues(t *testing.T, n Node, topic string, p int32, want []string) {
	t.Helper()
	got := ReadValues(t, n.Addr(), topic, p, 0)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s %s-%d holds\n  %v\nwant\n  %v", n.Addr(), topic, p, got, want)
	}
}

func LogEnd(n Node, topic string, p int32) int64 {
	part, _ := n.Broker().Partition(topic, p)
	return part.Offsets().LogEnd
}

// Chain runs A→B→C with failover at B, then at C. Without barriers it
// returns what C holds so the negative control can show the loss.
func Chain(t *testing.T, b, c Node) {
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	pa := IdempotentProducer(t, a.Addr())
	ProduceSerially(t, pa, "orders", 0, "a", 5)
	for _, hop := range []struct {
		dst  Node
		name string
		src  string
	}{{b, "from-a", a.Addr()}, {c, "from-b", b.Addr()}} {
		if err := MirrorOn(hop.dst).Create(hop.name, []string{hop.src}, ""); err != nil {
			t.Fatal(err)
		}
		if err := MirrorOn(hop.dst).Start(t.Context(), hop.name, []string{"orders"}); err != nil {
			t.Fatal(err)
		}
	}
	WaitMirrored(t, a, b, "orders", 1)
	WaitMirrored(t, b, c, "orders", 1)
	AssertIdentical(t, a, b, "orders", 0, 5)
	AssertIdentical(t, a, c, "orders", 0, 5)

	if err := MirrorOn(b).Stop("from-a", nil); err != nil { // failover at B
		t.Fatal(err)
	}
	pb := IdempotentProducer(t, b.Addr())
	ProduceSerially(t, pb, "orders", 0, "b", 5)
	WaitMirrored(t, b, c, "orders", 1)
	AssertIdentical(t, b, c, "orders", 0, LogEnd(b, "orders", 0))

	if err := MirrorOn(c).Stop("from-b", nil); err != nil { // failover at C
		t.Fatal(err)
	}
	pc := IdempotentProducer(t, c.Addr())
	ProduceSerially(t, pc, "orders", 0, "c", 5)
}

// SaramaConfig is a sarama config for a SyncProducer that writes to the
// partition each message names (so the expected order per partition is
// known) and a consumer; version is the Kafka version sarama assumes, which
// picks its request versions.
func SaramaConfig(version sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "minibroker-it"
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Timeout = 10 * time.Second
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 20 * time.Millisecond // short long polls: the tests read to the end
	return cfg
}

func Crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MirrorHooks are the mirror's test hooks (mirror.TestHooks) the
// integration tests set: a crash at a STOPPING step, and the rules the
// negative controls switch off.
type MirrorHooks struct {
	mirror.NoTestHooks
	NoBarrier, NoGroupClamp, NoEpochWalkBack bool
	// KIP-1279's leader-epoch invariant.
	KeepSourceEpoch bool
	// the mirror's safety checks: source identity, the failback guard, loops.
	NoIdentityCheck, NoTopicIDCheck, NoTruncateGuard, NoLoopCheck bool
	StopStep                                                      func(step mirror.StopStep, topic string, partition int32) error
}

func (h MirrorHooks) SkipIdentityCheck() bool { return h.NoIdentityCheck }
func (h MirrorHooks) SkipTopicIDCheck() bool  { return h.NoTopicIDCheck }
func (h MirrorHooks) SkipTruncateGuard() bool { return h.NoTruncateGuard }
func (h MirrorHooks) SkipLoopCheck() bool     { return h.NoLoopCheck }

func (h MirrorHooks) SkipBarrier() bool           { return h.NoBarrier }
func (h MirrorHooks) SkipGroupClamp() bool        { return h.NoGroupClamp }
func (h MirrorHooks) SkipEpochWalkBack() bool     { return h.NoEpochWalkBack }
func (h MirrorHooks) KeepSourceLeaderEpoch() bool { return h.KeepSourceEpoch }
func (h MirrorHooks) BeforeStopStep(step mirror.StopStep, topic string, partition int32) error {
	if h.StopStep == nil {
		return nil
	}
	return h.StopStep(step, topic, partition)
}

// ProduceValues writes n records of size bytes to topic partition 0, one
// batch each.
func ProduceValues(t *testing.T, cl *kgo.Client, topic string, n, size int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: 0, Key: []byte(strconv.Itoa(i)), Value: []byte(strings.Repeat("v", size))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
}

func WantConfig(t *testing.T, adm *kadm.Client, topic, name, value string, src kmsg.ConfigSource) {
	t.Helper()
	v, s := topicConfig(t, adm, topic, name)
	if v != value || s != src {
		t.Fatalf("%s %s = %q (%v), want %q (%v)", topic, name, v, s, value, src)
	}
}

func Sp(s string) *string { return &s }

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// BrokerProc is the built binary running `serve`.
type BrokerProc struct {
	Cmd      *exec.Cmd
	Addr     string
	HttpAddr string
	Exited   chan error
	logs     *strings.Builder
	logMu    *sync.Mutex
}

func (p *BrokerProc) Output() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.logs.String()
}

// Stop sends sig and waits for the process to exit.
func (p *BrokerProc) Stop(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	p.Cmd.Process.Signal(sig)
	select {
	case err := <-p.Exited:
		p.Exited <- err // for the cleanup, which waits for the exit too
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("broker did not exit on %v\n%s", sig, p.Output())
		return nil
	}
}

// SaramaGroupConsume runs one sarama group member until want records
// arrived (plus a short grace period to catch extra ones), then closes it
// (committing its marked offsets).
func SaramaGroupConsume(t *testing.T, addr, group, topic string, version sarama.KafkaVersion, want int) []string {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "minibroker-groups"
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 200 * time.Millisecond
	cfg.Consumer.Group.Rebalance.Timeout = 5 * time.Second
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &saramaGroupHandler{want: want, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	select {
	case <-h.done:
		time.Sleep(300 * time.Millisecond)
	case <-time.After(30 * time.Second):
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("sarama %s: consume: %v", version, err)
	}
	if err := cg.Close(); err != nil {
		t.Fatalf("sarama %s: close: %v", version, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.values
}

// PeakRSSKiB reads a process's peak resident set (VmHWM) from /proc.
func PeakRSSKiB(t *testing.T, pid int) int {
	t.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// RunTool runs the built binary and returns stdout, stderr and the exit
// status.
func RunTool(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(MinibrokerBinary(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &exit):
		return out.String(), errOut.String(), exit.ExitCode()
	}
	t.Fatalf("run %v: %v", args, err)
	return "", "", -1
}

// timeout bounds the waits of the mirror, drill and transaction tests.
const Timeout = 20 * time.Second

// saramaGroupHandler collects values until want arrived, marking each
// message so the offsets are committed.
type saramaGroupHandler struct {
	mu     sync.Mutex
	values []string
	want   int
	done   chan struct{}
	once   sync.Once
}

func (h *saramaGroupHandler) Setup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaGroupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaGroupHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.mu.Lock()
		h.values = append(h.values, string(m.Value))
		if len(h.values) >= h.want {
			h.once.Do(func() { close(h.done) })
		}
		h.mu.Unlock()
		s.MarkMessage(m, "")
	}
	return nil
}

// topicConfig describes one config of a topic: value and source.
func topicConfig(t *testing.T, adm *kadm.Client, topic, name string) (string, kmsg.ConfigSource) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue(), c.Source
		}
	}
	t.Fatalf("describe %s: no %s", topic, name)
	return "", 0
}
