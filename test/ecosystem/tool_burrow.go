package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// bgProc is a long-running tool (Burrow, ZooKeeper, an exporter) started
// in its own process group, stopped by stop.
type bgProc struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

func startBg(logPath string, env []string, argv ...string) (*bgProc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	trackGroup(cmd.Process.Pid)
	p := &bgProc{cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		untrackGroup(cmd.Process.Pid)
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *bgProc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *bgProc) output() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// stop: SIGTERM to the group, SIGKILL after 10s.
func (p *bgProc) stop() {
	if p == nil {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// httpGetBody GETs url with a 5s timeout.
func httpGetBody(url string) (string, error) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return string(b), fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return string(b), err
}

// lagFixture produces n records to a new topic (partitions 2) and commits
// offsets for group that leave lag records unread, with kgo/kadm.
func (e *env) lagFixture(topic, group string, n, lag int) error {
	if err := e.createTopic(false, topic, 2); err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.plain.addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: int64(n/2 - lag/2), LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: topic, Partition: 1, At: int64(n/2 - (lag - lag/2)), LeaderEpoch: -1})
	r, err := adm.CommitOffsets(ctx, group, offsets)
	if err != nil {
		return err
	}
	return r.Error()
}

// burrowSuite: Debian's Burrow 1.2 (LinkedIn's lag checker). Burrow 1.2
// needs a ZooKeeper for its own coordination, so Debian's zookeeper runs
// beside it. Its kafka consumer module reads committed offsets from
// __consumer_offsets, as it does against Kafka.
func burrowSuite(e *env) { burrowRun(e, "Burrow") }

// burrowKafka39Suite: Burrow 1.2 as its users would run it against
// minibroker, with the broker serving Kafka 3.9's version ranges
// (client.protocol.version=3.9) for its old sarama.
func burrowKafka39Suite(e *env) {
	const tool = "Burrow (broker at client.protocol.version=3.9)"
	k39, err := startBroker(e.brokerBin, e.s.tmp, "kafka39", false, "client.protocol.version=3.9")
	if err != nil {
		e.s.add(row{Tool: tool, Command: "start a broker with client.protocol.version=3.9", Result: resultFail, Detail: err.Error()})
		return
	}
	e.extra = append(e.extra, k39)
	burrowRun(&env{s: e.s, plain: k39, sasl: e.sasl, brokerBin: e.brokerBin}, tool)
}

func burrowRun(e *env, tool string) {
	burrow := e.s.lookTool("Burrow")
	if burrow == "" {
		e.s.skip(tool, "all commands", "burrow is not installed")
		return
	}
	zkPort, err1 := freePort()
	httpPort, err2 := freePort()
	if err1 != nil || err2 != nil {
		e.s.add(row{Tool: tool, Command: "free ports", Result: resultFail, Detail: fmt.Sprint(err1, err2)})
		return
	}
	var zk *bgProc
	e.s.check(tool, "(needs) ZooKeeper for Burrow's coordinator: Debian's zookeeper, standalone", func() error {
		var err error
		zk, err = startZooKeeper(e.s.tmp, zkPort)
		return err
	})
	defer zk.stop()
	if zk == nil {
		e.s.skip(tool, "lag", "Burrow 1.2 does not start without a ZooKeeper ('No Zookeeper servers specified')")
		return
	}
	const topic, group = "eco-burrow", "eco-burrow-g"
	if err := e.lagFixture(topic, group, 100, 30); err != nil {
		e.s.add(row{Tool: tool, Command: "(setup) produce 100, commit leaving lag 30 (kgo/kadm)", Result: resultFail, Detail: err.Error()})
	}
	dir := filepath.Join(e.s.tmp, "burrow")
	os.MkdirAll(dir, 0o755)
	cfg := fmt.Sprintf(`[general]
pidfile="%[1]s/burrow.pid"
[logging]
level="info"
[zookeeper]
servers=["127.0.0.1:%[2]d"]
timeout=6
root-path="/burrow"
[client-profile.mb]
client-id="burrow-eco"
kafka-version="2.0.0"
[cluster.local]
class-name="kafka"
servers=["%[3]s"]
client-profile="mb"
topic-refresh=5
offset-refresh=5
[consumer.local]
class-name="kafka"
cluster="local"
servers=["%[3]s"]
client-profile="mb"
offsets-topic="__consumer_offsets"
start-latest=false
[httpserver.default]
address="127.0.0.1:%[4]d"
[storage.default]
class-name="inmemory"
workers=2
intervals=10
expire-group=604800
min-distance=1
[evaluator.default]
class-name="caching"
expire-cache=10
`, dir, zkPort, e.plain.addr, httpPort)
	if err := os.WriteFile(filepath.Join(dir, "burrow.toml"), []byte(cfg), 0o644); err != nil {
		e.s.add(row{Tool: tool, Command: "write burrow.toml", Result: resultFail, Detail: err.Error()})
		return
	}
	var bp *bgProc
	base := fmt.Sprintf("http://127.0.0.1:%d/v3/kafka", httpPort)
	e.s.check(tool, "starts (cluster and consumer modules on the broker)", func() error {
		var err error
		bp, err = startBg(filepath.Join(dir, "burrow.out"), nil, burrow, "--config-dir", dir)
		if err != nil {
			return err
		}
		return waitUntil(20*time.Second, func() error {
			if !bp.running() {
				return permanent{fmt.Errorf("Burrow exited: %s", burrowErrors(bp.output()))}
			}
			_, err := httpGetBody(base)
			return err
		})
	})
	defer bp.stop()
	if bp == nil || !bp.running() {
		return
	}
	get := func(path string) (string, error) {
		if !bp.running() {
			return "", permanent{fmt.Errorf("Burrow exited: %s", burrowErrors(bp.output()))}
		}
		return httpGetBody(base + path)
	}
	e.s.check(tool, "lists the cluster's topics (/v3/kafka/local/topic)", func() error {
		return waitUntil(20*time.Second, func() error {
			out, err := get("/local/topic")
			if err != nil {
				return err
			}
			return expectContains(out, `"`+topic+`"`)
		})
	})
	e.s.check(tool, "reads a topic's end offsets (/v3/kafka/local/topic/T)", func() error {
		return waitUntil(20*time.Second, func() error {
			out, err := get("/local/topic/" + topic)
			if err != nil {
				return err
			}
			return expectContains(out, "[50,50]")
		})
	})
	e.s.check(tool, "finds the consumer group (/v3/kafka/local/consumer)", func() error {
		return waitUntil(30*time.Second, func() error {
			out, err := get("/local/consumer")
			if err != nil {
				return err
			}
			if err := expectContains(out, `"`+group+`"`); err != nil {
				return fmt.Errorf("%v; Burrow's log: %s", err, burrowErrors(bp.output()))
			}
			return nil
		})
	})
	e.s.check(tool, "reports the group's lag, 30 (/v3/kafka/local/consumer/G/lag)", func() error {
		return waitUntil(30*time.Second, func() error {
			out, err := get("/local/consumer/" + group + "/lag")
			if err != nil {
				return err
			}
			var r struct {
				Status struct {
					Totallag int64 `json:"totallag"`
				} `json:"status"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			if r.Status.Totallag != 30 {
				return fmt.Errorf("totallag %d, want 30", r.Status.Totallag)
			}
			return nil
		})
	})
	e.s.check(tool, "stays up (no exit, no panic in its log)", func() error {
		if !bp.running() {
			return fmt.Errorf("Burrow exited: %s", burrowErrors(bp.output()))
		}
		if strings.Contains(bp.output(), "panic") {
			return fmt.Errorf("%s", burrowErrors(bp.output()))
		}
		return nil
	})
}

// burrowErrors are the error and warning lines of Burrow's log.
func burrowErrors(log string) string {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `"level":"error"`) || strings.Contains(l, `"level":"warn"`) || strings.Contains(l, `"level":"panic"`) ||
			strings.HasPrefix(l, "panic") {
			var m map[string]any
			msg := l
			if json.Unmarshal([]byte(l), &m) == nil {
				msg = fmt.Sprint(m["msg"])
				for _, k := range []string{"error", "sarama_error", "topic", "partition", "broker"} {
					if v, ok := m[k]; ok {
						msg += fmt.Sprintf(" %s=%v", k, v)
					}
				}
			}
			if !seen[msg] {
				seen[msg] = true
				out = append(out, msg)
			}
		}
	}
	if len(out) == 0 {
		return "no error in its log"
	}
	if len(out) > 3 {
		out = out[:3]
	}
	return strings.Join(out, "; ")
}

// startZooKeeper runs Debian's ZooKeeper standalone on port with a
// temporary data directory, and waits until it answers.
func startZooKeeper(tmp string, port int) (*bgProc, error) {
	const jar = "/usr/share/java/zookeeper.jar"
	if !fileExists(jar) {
		return nil, fmt.Errorf("%s missing (apt-get install zookeeper)", jar)
	}
	dir := filepath.Join(tmp, "zookeeper")
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf("tickTime=2000\ndataDir=%s/data\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n", dir, port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	cp := "/etc/zookeeper/conf:/usr/share/java/*"
	p, err := startBg(filepath.Join(dir, "zookeeper.out"), nil, "java", "-Xmx256m", "-cp", cp,
		"org.apache.zookeeper.server.ZooKeeperServerMain", filepath.Join(dir, "zoo.cfg"))
	if err != nil {
		return nil, err
	}
	err = waitUntil(30*time.Second, func() error {
		if !p.running() {
			return fmt.Errorf("ZooKeeper exited: %s", tail(p.output(), ""))
		}
		// Serving once it answers the four-letter word srvr (3.8 allows it).
		c, err := netDial(fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("srvr")); err != nil {
			return err
		}
		b, _ := io.ReadAll(c)
		if !strings.Contains(string(b), "Mode: standalone") {
			return fmt.Errorf("ZooKeeper not serving yet: %q", b)
		}
		return nil
	})
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}
