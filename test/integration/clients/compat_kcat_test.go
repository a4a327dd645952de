package clients

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/minibrokertest"
)

// kcat (the Debian package, with the system librdkafka): -P, -C, -G, -Q,
// configured with -X. It has no admin mode beyond -L (metadata) and -Q.

func kcatCompatVersion(t *testing.T) string {
	out, _ := itest.RunKcat(t, "", "-V")
	v := "unknown"
	if _, rest, ok := strings.Cut(out, "Version "); ok {
		v = strings.Fields(rest)[0]
	}
	return "kcat " + v + " (librdkafka " + itest.LibrdkafkaVersion(t) + ")"
}

// kcatLine parses a line printed with -f '%p %o %s\n'.
func kcatLine(t *testing.T, line string) itest.CompatRecord {
	t.Helper()
	f := strings.SplitN(line, " ", 3)
	if len(f) != 3 {
		t.Fatalf("bad kcat line %q", line)
	}
	p, err1 := strconv.Atoi(f[0])
	o, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("bad kcat line %q", line)
	}
	return itest.CompatRecord{Partition: int32(p), Offset: o, Value: f[2]}
}

// unsupportedCodec matches librdkafka's debug line when it declines to
// compress.
var unsupportedCodec = regexp.MustCompile(`Broker does not support compression type [a-z0-9]+`)

func kcatCompat(t *testing.T, m *compatMatrix) {
	const client = "kcat"
	compatSecurityRows(t, m, client, kcatSecureProduce)
	c := minibrokertest.Start(t)
	compatProduceRows(t, m, client, c, nil, func(t *testing.T, topic string, values []string, spec produceSpec) string {
		args := []string{"-P", "-b", c.Addr(), "-t", topic, "-p", "0", "-X", "acks=" + spec.acks, "-X", "linger.ms=5", "-d", "msg"}
		if spec.codec != batch.CodecNone {
			args = append(args, "-z", codecName(spec.codec))
		}
		if spec.idempotent {
			args = append(args, "-X", "enable.idempotence=true")
		}
		_, debug := itest.RunKcat(t, strings.Join(values, "\n")+"\n", args...)
		if unsupportedCodec.MatchString(debug) {
			return fmt.Sprintf("librdkafka %s logs \"Broker does not support compression type <codec>: not compressing batch\" for gzip, snappy and lz4: "+
				"it offers them only to brokers that offer Produce v0, which minibroker (Produce v3+) and Kafka 4 (KIP-896) do not "+
				"(confluentinc/librdkafka#4956). zstd is compressed, and so are all four by the newer librdkafka bundled with confluent-kafka-go.",
				itest.LibrdkafkaVersion(t))
		}
		return ""
	}, func(t *testing.T, topic string, n int) []itest.CompatRecord {
		return kcatRead(t, c.Addr(), topic, false, n)
	})

	m.lacksVerified(t, client, rowTxn, func(t *testing.T) string { return kcatTransactions(t, c) })
	m.lacks(t, client, rowTxnV2, "librdkafka 2.0.2 predates KIP-890: it sends EndTxn up to v1 and AddPartitionsToTxn v0.")
	compatControlRow(t, m, client, c, func(t *testing.T, topic string, committed bool, n int) []itest.CompatRecord {
		return kcatRead(t, c.Addr(), topic, committed, n)
	})
	compatGroupRow(t, m, client, c, func(t *testing.T, group, topic string) itest.CompatMember {
		return startKcatMember(t, c.Addr(), group, topic)
	})
	m.lacksVerified(t, client, rowGroup848, func(t *testing.T) string {
		// kcat's builtin librdkafka predates KIP-848 (2.10): it refuses
		// the setting that would select the consumer protocol.
		out, err := exec.Command(itest.KcatBinary(t), "-b", c.Addr(), "-G", "g848", "-X", "group.protocol=consumer", "-e", "-q", "t848").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "group.protocol") {
			t.Fatalf("kcat -X group.protocol=consumer: %v, output %q", err, out)
		}
		return "kcat's librdkafka (" + itest.LibrdkafkaVersion(t) + ") has no group.protocol setting (KIP-848 consumers need librdkafka 2.10+)."
	})

	query := func(t *testing.T, topic string, ts int64) int64 {
		out, _ := itest.RunKcat(t, "", "-Q", "-b", c.Addr(), "-t", fmt.Sprintf("%s:0:%d", topic, ts))
		var off int64
		if _, err := fmt.Sscanf(strings.TrimSpace(out), topic+" [0] offset %d", &off); err != nil {
			t.Fatalf("kcat -Q output %q: %v", out, err)
		}
		return off
	}
	const noAdmin = "kcat has no admin mode: -L reads metadata and -Q lists offsets, nothing creates, deletes or describes."
	compatAdminRows(t, m, client, c, adminOps{
		lacks: map[compatRow]string{
			rowCreate:  noAdmin,
			rowDelete:  noAdmin,
			rowConfigs: noAdmin,
		},
		// -Q asks ListOffsets for a timestamp; -2 and -1 are Kafka's
		// EARLIEST and LATEST.
		listEnds: func(t *testing.T, topic string) (int64, int64) {
			return query(t, topic, -2), query(t, topic, -1)
		},
		listTime: func(t *testing.T, topic string, ts time.Time) int64 {
			return query(t, topic, ts.UnixMilli())
		},
	})
}

// kcatRead reads n messages of partition 0 from the beginning with kcat -C.
func kcatRead(t *testing.T, addr, topic string, committed bool, n int) []itest.CompatRecord {
	t.Helper()
	iso := "read_uncommitted"
	if committed {
		iso = "read_committed"
	}
	out, _ := itest.RunKcat(t, "", "-C", "-b", addr, "-t", topic, "-p", "0", "-o", "beginning", "-c", strconv.Itoa(n), "-e",
		"-X", "isolation.level="+iso, "-f", "%p %o %s\n")
	var recs []itest.CompatRecord
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line != "" {
			recs = append(recs, kcatLine(t, line))
		}
	}
	return recs
}

// kcatMember is a kcat -G process; what it prints is its records. It
// auto-commits every 100 ms and on close (SIGTERM), then leaves.
type kcatMember struct {
	itest.RecordLog
	cmd    *exec.Cmd
	stderr strings.Builder
	done   chan struct{}
	once   sync.Once
}

func startKcatMember(t *testing.T, addr, group, topic string) itest.CompatMember {
	m := &kcatMember{done: make(chan struct{})}
	m.cmd = exec.Command(itest.KcatBinary(t), "-b", addr, "-G", group, "-u", "-q", "-f", "%p %o %s\n",
		"-X", "auto.offset.reset=earliest", "-X", "auto.commit.interval.ms=100", "-X", "session.timeout.ms=6000",
		"-X", "heartbeat.interval.ms=200", "-X", "fetch.wait.max.ms=100", "-X", "topic.metadata.refresh.interval.ms=1000", topic)
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	m.cmd.Stderr = &m.stderr
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			f := strings.SplitN(sc.Text(), " ", 3)
			if len(f) != 3 {
				continue
			}
			p, _ := strconv.Atoi(f[0])
			o, _ := strconv.ParseInt(f[1], 10, 64)
			m.Add(itest.CompatRecord{Partition: int32(p), Offset: o, Value: f[2]})
		}
	}()
	t.Cleanup(func() { m.Close(t) })
	return m
}

func (m *kcatMember) Close(t *testing.T) {
	m.once.Do(func() {
		m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(30 * time.Second):
			m.cmd.Process.Kill()
			<-m.done
		}
		if err := m.cmd.Wait(); err != nil {
			t.Logf("kcat -G exited: %v; stderr:\n%s", err, m.stderr.String())
		}
	})
}

// kcatTransactions: kcat -P -X transactional.id=… sends its whole input
// as one transaction, committed when stdin closes. kcat reads stdin in
// large blocks, so the run to abort is fed 200 records of 1.1 KiB, which
// it starts producing before its input ends; once they are in the log
// (open transaction), it gets SIGINT, which its help says aborts.
func kcatTransactions(t *testing.T, c *minibrokertest.Cluster) string {
	const topic = "txn"
	itest.CreateCompatTopic(t, c, topic, 1)
	args := []string{"-P", "-b", c.Addr(), "-t", topic, "-p", "0", "-X", "transactional.id=kcat-compat", "-T", "-u",
		"-X", "transaction.timeout.ms=10000"}
	a := compatValues("committed-a", 2)
	itest.RunKcat(t, strings.Join(a, "\n")+"\n", args...) // a@0,1 COMMIT@2
	part, _ := c.Broker().Partition(topic, 0)

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, itest.KcatBinary(t), args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	x := compatValues("aborted", 200)
	written := make(chan struct{})
	go func() { // stdin stays open
		io.WriteString(stdin, strings.Join(x, "\n")+"\n")
		close(written)
	}()
	// -T echoes each value as kcat produces it (without delimiter).
	var echoed atomicCounter
	go io.Copy(&echoed, stdout)
	itest.WaitFor(t, "kcat to produce part of its input", func() bool { return echoed.n()/len(x[0]) >= 50 })
	produced := int64(echoed.n() / len(x[0]))
	itest.WaitFor(t, "the produced records in the log", func() bool { return part.Offsets().LogEnd >= 3+produced })
	if off := part.Offsets(); off.LastStable != 3 {
		t.Fatalf("open transaction: LSO %d, want 3", off.LastStable)
	}
	<-written
	// kcat's SIGINT handler only stops its input loop, which is blocked
	// reading stdin: closing stdin lets it see the stop and abort.
	cmd.Process.Signal(syscall.SIGINT)
	stdin.Close()
	err = cmd.Wait()
	t.Logf("kcat after SIGINT: %v; stderr:\n%s", err, stderr.String())
	if ctx.Err() != nil {
		t.Fatal("kcat did not exit on SIGINT")
	}
	// kcat usually exits without ending the transaction: it stays open
	// until the coordinator aborts it at transaction.timeout.ms. When its
	// signal handler wins the race with its input loop it aborts the
	// transaction itself ("Aborting transaction due to termination
	// signal") and the abort marker is already there. Either way nothing
	// of it may be committed.
	if off := part.Offsets(); off.LastStable != 3 && off.LastStable != off.LogEnd {
		t.Fatalf("right after kcat exited: LSO %d, want 3 (transaction still open) or the log end %d (aborted by kcat)", off.LastStable, off.LogEnd)
	}
	itest.WaitFor(t, "the abort marker (transaction timeout)", func() bool { off := part.Offsets(); return off.LastStable == off.LogEnd })
	aborted := int(part.Offsets().LogEnd - 3 - 1) // x@3…, ABORT last

	b := compatValues("committed-b", 2)
	itest.RunKcat(t, strings.Join(b, "\n")+"\n", args...)
	end := int64(3 + aborted + 1)
	checkRecords(t, "kcat read_committed", kcatRead(t, c.Addr(), topic, true, 4), itest.Concat(a, b), []int64{0, 1, end, end + 1})
	un := kcatRead(t, c.Addr(), topic, false, 4+aborted)
	checkRecords(t, "kcat read_uncommitted", un, itest.Concat(a, x[:aborted], b), append(append([]int64{0, 1}, offsetsFrom(3, aborted)...), end, end+1))
	hs, bs := itest.BatchesOf(t, c, topic, 0, end-1, end)
	if cr, err := batch.ReadControl(bs[0]); len(hs) != 1 || err != nil || cr.Type != batch.ControlAbort {
		t.Fatalf("offset %d: %v %v, want the ABORT marker", end-1, cr.Type, err)
	}
	return "kcat cannot abort a transaction. `-X transactional.id=…` makes its input one transaction, committed " +
		"when stdin closes (checked with read_committed). Its help says a signal aborts it, but kcat 1.7.1 " +
		"exits on SIGINT (with an error, or killed by the signal, depending on where it was) without ending the " +
		"transaction, which stays open until the coordinator aborts it at " +
		"`transaction.timeout.ms` (checked with 10 s: ABORT marker written, the records hidden from read_committed " +
		"and shown to read_uncommitted). Also, kcat reads stdin in large blocks: it produces nothing until a block " +
		"fills or stdin closes."
}

func offsetsFrom(first int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = first + int64(i)
	}
	return out
}

// atomicCounter is an io.Writer counting bytes, safe to read concurrently.
type atomicCounter struct {
	mu    sync.Mutex
	count int
}

func (c *atomicCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.count += len(p)
	c.mu.Unlock()
	return len(p), nil
}

func (c *atomicCounter) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}
