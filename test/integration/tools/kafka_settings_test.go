package tools

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaServerProperties is the server.properties of Kafka's own Docker
// example (docker/examples/fixtures/file-input, a broker of a KRaft
// cluster), as a user copies it, with the ports made free, the SSL
// listener (JKS keystores, which minibroker does not read) left out, the
// node made combined (process.roles=broker,controller, as the single-node
// examples are) and the settings every Kafka compose file carries for a
// one-broker cluster added.
const kafkaServerProperties = `# Kafka-style configuration
advertised.listeners=PLAINTEXT_HOST://localhost:%[1]d,PLAINTEXT://127.0.0.1:%[2]d
controller.listener.names=CONTROLLER
controller.quorum.voters=3@localhost:%[3]d
group.initial.rebalance.delay.ms=0
inter.broker.listener.name=PLAINTEXT
listeners=PLAINTEXT_HOST://127.0.0.1:%[1]d,PLAINTEXT://127.0.0.1:%[2]d,CONTROLLER://127.0.0.1:%[3]d
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT
log.dirs=%[4]s
node.id=3
process.roles=broker,controller
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.num.partitions=1
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
num.recovery.threads.per.data.dir=1
log.retention.hours=1
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
`

// TestKafkaServerPropertiesFile: the binary starts with a Kafka
// server.properties (serve --config server.properties) and acts on the
// settings that mean something on one node: node.id is the node id
// Metadata names, log.dirs the data directory, log.retention.hours the
// retention (described as log.retention.ms), the CONTROLLER listener
// (controller.listener.names) is not opened; the rest
// (offsets.topic.replication.factor, transaction.state.log.*, …) is
// accepted and named once at start-up as ignored. kgo produces and reads
// through the PLAINTEXT listener.
//
// Seen failing before the change: the binary read the file as YAML and
// exited ("yaml: unmarshal errors"); the same settings given by --set or
// the YAML kafka: section were refused (`unknown setting
// "offsets.topic.replication.factor"`).
func TestKafkaServerPropertiesFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "kraft-combined-logs")
	host, plain, ctrl := itest.FreePort(t), itest.FreePort(t), itest.FreePort(t)
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte(fmt.Sprintf(kafkaServerProperties, host, plain, ctrl, dataDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := itest.StartBinaryWith(t, nil, "serve", "--config", props, "--http-listen", "127.0.0.1:0", "--log-format", "json")
	addr := fmt.Sprintf("127.0.0.1:%d", plain)
	checkKafkaStyleBroker(t, p, addr, 3, dataDir)
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", ctrl), time.Second); err == nil {
		c.Close()
		t.Fatalf("the CONTROLLER listener (controller.listener.names) is open")
	}
	logs := p.Output()
	// transaction.state.log.min.isr is not among them: it is the
	// min.insync.replicas of __transaction_state (checked below).
	for _, name := range []string{"offsets.topic.replication.factor", "transaction.state.log.replication.factor", "process.roles", "controller.quorum.voters", "num.network.threads"} {
		if !strings.Contains(logs, `"`+name+`"`) || !strings.Contains(logs, "accepted and ignored") {
			t.Fatalf("start-up log does not name %s as accepted and ignored:\n%s", name, logs)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := itest.KadmClient(t, addr).DescribeBrokerConfigs(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rc {
		for _, c := range r.Configs {
			if c.Key == "log.retention.ms" {
				found = true
				if c.MaybeValue() != "3600000" {
					t.Fatalf("log.retention.ms %q, want 3600000 (log.retention.hours=1)", c.MaybeValue())
				}
			}
		}
	}
	if !found {
		t.Fatal("log.retention.ms not described")
	}
	tc, err := itest.KadmClient(t, addr).DescribeTopicConfigs(ctx, "__transaction_state")
	if err != nil {
		t.Fatal(err)
	}
	isr, err := tc.On("__transaction_state", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := "(not described)"
	for _, c := range isr.Configs {
		if c.Key == "min.insync.replicas" {
			got = c.MaybeValue()
		}
	}
	if got != "1" {
		t.Fatalf("__transaction_state min.insync.replicas %s, want 1 (transaction.state.log.min.isr=1)", got)
	}
}

// TestKafkaImageEnvironment: `serve --kafka-env` takes the environment of
// Kafka's single-node compose example (docker/examples/.../single-node/
// plaintext/docker-compose.yml: KAFKA_NODE_ID, KAFKA_LISTENERS,
// KAFKA_ADVERTISED_LISTENERS, CLUSTER_ID, KAFKA_LOG_DIRS, …) with its
// ports made free, over the image's own command (--listen
// 0.0.0.0:9092-style shorthand, which the environment's listeners
// replace): node 1, the cluster id given, the data in KAFKA_LOG_DIRS, and
// kgo produces and reads. A variable of the image that is not a setting
// (KAFKA_HEAP_OPTS) is not one; an unknown one (KAFKA_JMX_PORT) is
// ignored with a warning, as Kafka does; a bad value stops the start.
//
// Seen failing before the change: serve has no --kafka-env flag.
func TestKafkaImageEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "kraft-combined-logs")
	host, plain, ctrl := itest.FreePort(t), itest.FreePort(t), itest.FreePort(t)
	env := []string{
		"KAFKA_NODE_ID=1",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
		fmt.Sprintf("KAFKA_ADVERTISED_LISTENERS=PLAINTEXT_HOST://localhost:%d,PLAINTEXT://127.0.0.1:%d", host, plain),
		"KAFKA_PROCESS_ROLES=broker,controller",
		fmt.Sprintf("KAFKA_CONTROLLER_QUORUM_VOTERS=1@127.0.0.1:%d", ctrl),
		fmt.Sprintf("KAFKA_LISTENERS=CONTROLLER://127.0.0.1:%d,PLAINTEXT_HOST://127.0.0.1:%d,PLAINTEXT://127.0.0.1:%d", ctrl, host, plain),
		"KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT",
		"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
		"CLUSTER_ID=4L6g3nShT-eMCtK--X86sw",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0",
		"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=1",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=1",
		"KAFKA_LOG_DIRS=" + dataDir,
		"KAFKA_HEAP_OPTS=-Xmx1G",
		"KAFKA_JMX_PORT=9101",
	}
	image := []string{"serve", "--kafka-env", "--data-dir", filepath.Join(dir, "unused"), "--listen", "0.0.0.0:0",
		"--advertised-listener", "localhost:9092", "--http-listen", "127.0.0.1:0", "--log-format", "json"}
	p := itest.StartBinaryWith(t, env, image...)
	checkKafkaStyleBroker(t, p, fmt.Sprintf("127.0.0.1:%d", plain), 1, dataDir)
	logs := p.Output()
	if !strings.Contains(logs, "4L6g3nShT-eMCtK--X86sw") {
		t.Fatalf("cluster id of CLUSTER_ID not in the start-up log:\n%s", logs)
	}
	if !strings.Contains(logs, "unknown settings ignored") || !strings.Contains(logs, "jmx.port") || strings.Contains(logs, "heap.opts") {
		t.Fatalf("want jmx.port (KAFKA_JMX_PORT) named as ignored and KAFKA_HEAP_OPTS not taken for a setting:\n%s", logs)
	}
	if _, err := os.Stat(filepath.Join(dir, "unused")); err == nil {
		t.Fatal("--data-dir was used though KAFKA_LOG_DIRS is set")
	}

	// A value Kafka's rule refuses stops the start, naming the setting.
	out, err := runBinaryEnv(t, append(env[:len(env):len(env)], "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=0"), image...)
	if err == nil || !strings.Contains(out, "offsets.topic.replication.factor") || !strings.Contains(out, "at least 1") {
		t.Fatalf("offsets.topic.replication.factor=0: %v\n%s", err, out)
	}
}

// runBinaryEnv runs the binary to its end (at most 20 s) and returns its
// combined output.
func runBinaryEnv(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, itest.MinibrokerBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// checkKafkaStyleBroker: the broker answers at addr as node, keeps its
// data in dataDir, and kgo produces and reads a record through it.
func checkKafkaStyleBroker(t *testing.T, p *itest.BrokerProc, addr string, node int32, dataDir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dataDir, "meta.properties")); err != nil {
		t.Fatalf("data dir %s: %v\n%s", dataDir, err, p.Output())
	}
	md := itest.KadmMetadata(t, addr)
	if len(md.Brokers) != 1 || md.Brokers[0].NodeID != node {
		t.Fatalf("brokers %+v, want node %d", md.Brokers, node)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := itest.NewClient(t, addr, kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("compose"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "compose", Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "hello" {
		t.Fatalf("consumed %v (%v)", recs, fs.Errors())
	}
}
