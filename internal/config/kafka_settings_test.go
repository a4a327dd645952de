package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKafkaBrokerSettings: the settings every Kafka compose file and
// server.properties carries are accepted with Kafka's type and range
// checks; the ones that mean nothing on one node are marked ignored, the
// ones minibroker acts on are not. Before the change Set refused each
// name as unknown.
func TestKafkaBrokerSettings(t *testing.T) {
	for _, kv := range [][2]string{
		{"offsets.topic.replication.factor", "1"}, {"offsets.topic.num.partitions", "1"},
		{"transaction.state.log.replication.factor", "1"}, {"transaction.state.log.min.isr", "1"},
		{"transaction.state.log.num.partitions", "1"}, {"process.roles", "broker,controller"},
		{"controller.quorum.voters", "1@localhost:9093"}, {"controller.listener.names", "CONTROLLER"},
		{"inter.broker.listener.name", "PLAINTEXT"}, {"node.id", "1"}, {"log.dirs", "/tmp/kraft-combined-logs"},
		{"num.network.threads", "3"}, {"num.io.threads", "8"}, {"socket.send.buffer.bytes", "102400"},
		{"log.retention.hours", "168"}, {"share.coordinator.state.topic.replication.factor", "1"},
		{"confluent.support.metrics.enable", ""}, // not Kafka's: refused below
	} {
		c := Default()
		err := c.Set(kv[0], kv[1])
		if kv[0] == "confluent.support.metrics.enable" {
			if err == nil {
				t.Errorf("%s accepted", kv[0])
			}
			continue
		}
		if err != nil {
			t.Errorf("Set(%s=%s): %v", kv[0], kv[1], err)
		}
	}
	for _, bad := range []struct{ kv, rule string }{
		{"offsets.topic.replication.factor=0", "at least 1"},
		{"transaction.state.log.replication.factor=40000", "not a number of type SHORT"},
		{"offsets.topic.num.partitions=x", "not a number of type INT"},
		{"group.share.max.size=5", "at least 10"},
		{"process.roles=broker,observer", "must be one of"},
		{"compression.gzip.level=0", "between 1 and 9 or equal to -1"},
		{"security.inter.broker.protocol=TLS", "must be one of"},
		{"log.cleaner.min.cleanable.ratio=1.5", "between 0 and 1"},
		{"controlled.shutdown.enable=yes", "true or false"},
	} {
		c := Default()
		if err := c.SetPair(bad.kv); err == nil || !strings.Contains(err.Error(), bad.rule) {
			t.Errorf("%s: %v, want an error saying %q", bad.kv, err, bad.rule)
		}
	}
	for name, want := range map[string]bool{"offsets.topic.replication.factor": true, "num.io.threads": true,
		"node.id": false, "log.dirs": false, "log.retention.ms": false, "log.retention.hours": false, "min.insync.replicas": true} {
		s, ok := Lookup(name)
		if !ok || s.Ignored != want {
			t.Errorf("%s: known %v, ignored %v; want ignored %v", name, ok, s.Ignored, want)
		}
	}
	if n := len(Settings()); n < 300 {
		t.Errorf("%d broker settings, want Kafka's (over 300)", n)
	}
}

// TestKafkaUnitSynonyms: log.retention.minutes and .hours, log.roll.hours
// and offsets.retention.minutes give the millisecond setting when it is
// not set, in Kafka's order.
func TestKafkaUnitSynonyms(t *testing.T) {
	c := Default()
	if got := c.String("log.retention.ms"); got != "604800000" {
		t.Fatalf("default log.retention.ms %s", got)
	}
	c.Set("log.retention.hours", "2")
	if got := c.String("log.retention.ms"); got != "7200000" {
		t.Fatalf("hours=2: %s", got)
	}
	c.Set("log.retention.minutes", "3")
	if got := c.String("log.retention.ms"); got != "180000" {
		t.Fatalf("minutes=3 over hours: %s", got)
	}
	c.Set("log.retention.ms", "5")
	if got := c.String("log.retention.ms"); got != "5" {
		t.Fatalf("ms over minutes: %s", got)
	}
	c.Set("log.roll.hours", "1")
	c.Set("offsets.retention.minutes", "1")
	if c.Int64("log.roll.ms") != 3_600_000 || c.Int64("offsets.retention.ms") != 60_000 {
		t.Fatalf("roll %d offsets %d", c.Int64("log.roll.ms"), c.Int64("offsets.retention.ms"))
	}
	d := Default()
	d.Set("log.retention.hours", "-1")
	if got := d.String("log.retention.ms"); got != "-1" {
		t.Fatalf("hours=-1: %s, want -1 (forever)", got)
	}
}

// TestApplyKafkaIdentity: node.id / broker.id and log.dirs / log.dir
// replace the node id and the data directory.
func TestApplyKafkaIdentity(t *testing.T) {
	c := Default()
	c.Set("node.id", "7")
	c.Set("log.dirs", "/var/lib/kafka/data")
	c.Set("log.dir", "/ignored")
	if err := c.ApplyKafkaIdentity(); err != nil || c.NodeID != 7 || c.DataDir != "/var/lib/kafka/data" {
		t.Fatalf("%v: node %d dir %s", err, c.NodeID, c.DataDir)
	}
	c = Default()
	c.Set("broker.id", "2")
	c.Set("log.dir", "/x")
	if err := c.ApplyKafkaIdentity(); err != nil || c.NodeID != 2 || c.DataDir != "/x" {
		t.Fatalf("%v: node %d dir %s", err, c.NodeID, c.DataDir)
	}
	c.Set("node.id", "3")
	if err := c.ApplyKafkaIdentity(); err == nil {
		t.Fatal("node.id 3 and broker.id 2 accepted")
	}
	c = Default()
	c.Set("log.dirs", "/a,/b")
	if err := c.ApplyKafkaIdentity(); err == nil || !strings.Contains(err.Error(), "one data directory") {
		t.Fatalf("two log dirs: %v", err)
	}
	c = Default()
	c.Set("node.id", "-1") // Kafka's default: not set
	if err := c.ApplyKafkaIdentity(); err != nil || c.NodeID != 0 {
		t.Fatalf("node.id -1: %v, node %d", err, c.NodeID)
	}
}

// TestKafkaEnvNames: the official image's rules for variable names.
func TestKafkaEnvNames(t *testing.T) {
	for env, want := range map[string]string{
		"KAFKA_LISTENERS":                                "listeners",
		"KAFKA_ADVERTISED_LISTENERS":                     "advertised.listeners",
		"KAFKA_NODE_ID":                                  "node.id",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":         "offsets.topic.replication.factor",
		"KAFKA_LISTENER_NAME_EXTERNAL_SSL__CLIENT__AUTH": "listener.name.external.ssl_client_auth",
		"KAFKA_FOO___BAR":                                "foo-bar",
		"KAFKA_HEAP_OPTS":                                "",
		"KAFKA_LOG4J_ROOT_LOGLEVEL":                      "",
		"KAFKA_JMX_HOSTNAME":                             "",
		"CLUSTER_ID":                                     "",
		"PATH":                                           "",
	} {
		if got := KafkaEnvName(env); got != want {
			t.Errorf("%s → %q, want %q", env, got, want)
		}
	}
	settings, id := KafkaEnv([]string{"CLUSTER_ID=abc", "KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://broker:19092,HOST://localhost:9092", "HOME=/"})
	if id != "abc" || settings["listeners"] != "PLAINTEXT://0.0.0.0:19092,HOST://0.0.0.0:9092" || len(settings) != 2 {
		t.Fatalf("id %q settings %v", id, settings)
	}
	settings, _ = KafkaEnv([]string{"KAFKA_PROCESS_ROLES=controller", "KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://b:1"})
	if _, ok := settings["listeners"]; ok {
		t.Fatalf("a controller got listeners from advertised ones: %v", settings)
	}
}

// TestSettingsDoc: docs/SETTINGS.md is generated from the settings table;
// MINIBROKER_UPDATE_DOCS=1 rewrites it.
func TestSettingsDoc(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "SETTINGS.md")
	want := SettingsMarkdown()
	if os.Getenv("MINIBROKER_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("docs/SETTINGS.md is not the table's: run MINIBROKER_UPDATE_DOCS=1 go test ./internal/config -run TestSettingsDoc")
	}
}
