package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The shipped config file documents every setting with its default, and
// loads cleanly.
func TestShippedConfigDocumentsEverySetting(t *testing.T) {
	path := filepath.Join("..", "..", "configs", "minibroker.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Settings() {
		if _, kafkaOnly := actedOn[s.Name]; kafkaOnly || s.Ignored {
			continue // docs/SETTINGS.md lists them (TestSettingsDoc)
		}
		if !strings.Contains(string(raw), s.Name+": \""+s.Default+"\"") {
			t.Errorf("configs/minibroker.yaml lacks %s with default %s", s.Name, s.Default)
		}
	}
	c := Default()
	if err := c.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9092" || c.HTTPListen != "127.0.0.1:9644" || c.DataDir != "./data" {
		t.Fatalf("defaults differ from the file: %+v", c)
	}
}

func TestSetRejectsUnknownAndBadValues(t *testing.T) {
	c := Default()
	if err := c.SetPair("log.segment.bytes=1048576"); err != nil || c.Int64("log.segment.bytes") != 1048576 {
		t.Fatalf("set: %v", err)
	}
	for _, bad := range []string{"no.such.setting=1", "log.segment.bytes=abc", "auto.create.topics.enable=maybe", "num.partitions=0", "novalue"} {
		if err := c.SetPair(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if c.Bool("auto.create.topics.enable") != true || c.Int32("num.partitions") != 1 {
		t.Fatal("defaults wrong")
	}
}

func TestLoadFileRejectsUnknownKeys(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("data-dirr: x\n"), 0o644)
	c := Default()
	if err := c.LoadFile(p); err == nil {
		t.Fatal("typo accepted")
	}
	os.WriteFile(p, []byte("kafka:\n  num.partitions: 3\n"), 0o644)
	c = Default()
	if err := c.LoadFile(p); err != nil || c.Int32("num.partitions") != 3 {
		t.Fatalf("load: %v", err)
	}
}

// max.connections.per.ip.overrides is parsed as Kafka's Csv.parseCsvMap:
// commas between entries, the last colon splits host from count.
func TestParseConnectionOverrides(t *testing.T) {
	got, err := ParseConnectionOverrides(" localhost:7 , 127.0.0.2:0,::1:3,fe80::1:5")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"localhost": 7, "127.0.0.2": 0, "::1": 3, "fe80::1": 5}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if m, err := ParseConnectionOverrides(""); err != nil || len(m) != 0 {
		t.Fatalf("empty: %v %v", m, err)
	}
	c := Default()
	for _, bad := range []string{"127.0.0.1", "127.0.0.1:not_a_number", ":3", "a:1,b"} {
		if err := c.Set("max.connections.per.ip.overrides", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := c.Set("max.connections.per.ip", "0"); err != nil {
		t.Fatalf("Kafka allows max.connections.per.ip=0: %v", err)
	}
}

// Each value Kafka's ConfigDef refuses is refused, the error naming the
// key, the value and the rule; none is bent to something else.
func TestSettingsRefusedWithKeyValueAndRule(t *testing.T) {
	for _, c := range []struct{ name, value, rule string }{
		{"log.segment.bytes", "3000000000", "not a number of type INT"},
		{"log.segment.bytes", "13", "value must be at least 14"},
		{"socket.request.max.bytes", "3000000000", "not a number of type INT"},
		{"socket.request.max.bytes", "0", "value must be at least 1"},
		{"log.message.timestamp.type", "Bogus", "string must be one of: CreateTime, LogAppendTime"},
		{"log.message.timestamp.type", "createtime", "string must be one of"},
		{"log.retention.ms", "-2", "value must be at least -1"},
		{"log.retention.ms", "99999999999999999999", "not a number of type LONG"},
		{"fetch.max.bytes", "1023", "value must be at least 1024"},
		{"default.replication.factor", "3", "value must be no more than 1"},
		{"auto.create.topics.enable", "yes", "true or false"},
		{"num.partitions", "1.5", "not a number of type INT"},
	} {
		cfg := Default()
		err := cfg.Set(c.name, c.value)
		if err == nil {
			t.Errorf("%s=%s accepted", c.name, c.value)
			continue
		}
		for _, want := range []string{c.name, c.value, c.rule} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s=%s: %q lacks %q", c.name, c.value, err, want)
			}
		}
		if _, set := cfg.Kafka[c.name]; set {
			t.Errorf("%s=%s: kept after refusal", c.name, c.value)
		}
		// Validate (start-up) refuses the same value however it got in.
		cfg.Kafka[c.name] = c.value
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.rule) {
			t.Errorf("Validate %s=%s: %v", c.name, c.value, err)
		}
	}
	cfg := Default()
	cfg.NodeID = -1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "node-id") || !strings.Contains(err.Error(), "-1") {
		t.Errorf("node id -1: %v", err)
	}
	// Values at the edges are accepted as they are.
	for _, ok := range [][2]string{{"log.segment.bytes", "2147483647"}, {"log.segment.bytes", "14"},
		{"log.retention.bytes", "-5"}, {"auto.create.topics.enable", "FALSE"}, {"log.retention.ms", "0"}} {
		cfg := Default()
		if err := cfg.Set(ok[0], ok[1]); err != nil || cfg.String(ok[0]) != ok[1] {
			t.Errorf("%s=%s: %v", ok[0], ok[1], err)
		}
	}
	if c := Default(); c.Set("auto.create.topics.enable", "FALSE") != nil || c.Bool("auto.create.topics.enable") {
		t.Error("FALSE read as true")
	}
}

// Topic-level configs go through the same table under their topic names.
func TestTopicConfigRules(t *testing.T) {
	for _, c := range []struct{ name, value, want string }{
		{"segment.bytes", "3000000000", "segment.bytes"},
		{"retention.ms", "-2", "at least -1"},
		{"message.timestamp.type", "Bogus", "CreateTime, LogAppendTime"},
		{"cleanup.policy", "delete,shred", "shred"},
		{"min.cleanable.dirty.ratio", "1.5", "between 0 and 1"},
		{"no.such.config", "1", "unknown topic config name: no.such.config"},
	} {
		err := ValidateTopicConfig(c.name, c.value)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%s: %v, want %q", c.name, c.value, err, c.want)
		}
	}
	for _, ok := range [][2]string{{"segment.bytes", "1048576"}, {"cleanup.policy", "compact, delete"},
		{"retention.ms", "-1"}, {"min.cleanable.dirty.ratio", "0.25"}, {"compression.type", "zstd"}} {
		if err := ValidateTopicConfig(ok[0], ok[1]); err != nil {
			t.Errorf("%s=%s: %v", ok[0], ok[1], err)
		}
	}
	// Every row is well formed: a name, a kind, and a default its own
	// rule accepts.
	for _, s := range settings {
		name := s.Name
		if name == "" {
			name = s.Topic
		}
		if name == "" || s.Kind == 0 {
			t.Errorf("row %+v: no name or kind", s)
		}
		if s.Default == "" && (s.Kind == KindInt || s.Kind == KindLong || s.Kind == KindShort || s.Kind == KindDouble) {
			continue // Kafka's null default: not set
		}
		if err := s.Validate(name, s.Default); err != nil {
			t.Errorf("default of %s: %v", name, err)
		}
	}
}

func TestListenerScopedSettings(t *testing.T) {
	c := Default()
	if err := c.Set("listener.name.SECURE.ssl.client.auth", "required"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("listener.name.secure.plain.sasl.jaas.config",
		`org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="b";`); err != nil {
		t.Fatal(err)
	}
	if got := c.ListenerString("SECURE", "ssl.client.auth"); got != "required" {
		t.Fatalf("override: %q", got)
	}
	if got := c.ListenerString("OTHER", "ssl.client.auth"); got != "none" {
		t.Fatalf("default: %q", got)
	}
	jaas, ok := c.JAAS("Secure", "PLAIN")
	if !ok {
		t.Fatal("no jaas")
	}
	e, err := ParseJAAS(jaas)
	if err != nil || e.Options["user_alice"] != "alice-secret" || e.Options["user_bob"] != "b" {
		t.Fatalf("%+v %v", e, err)
	}
	if !IsSensitive("listener.name.secure.plain.sasl.jaas.config") || !IsSensitive("ssl.key.password") || IsSensitive("ssl.client.auth") {
		t.Fatal("sensitivity")
	}
	for _, bad := range []string{"listener.name.x.log.segment.bytes", "listener.name.x.ssl.client.auth=maybe"} {
		k, v, _ := strings.Cut(bad, "=")
		if v == "" {
			v = "1"
		}
		if err := c.Set(k, v); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	// A bad JAAS value is refused without echoing it (it holds passwords).
	err = c.Set("listener.name.x.plain.sasl.jaas.config", `Mod required user_a="secret-pw"`)
	if err == nil || strings.Contains(err.Error(), "secret-pw") {
		t.Fatalf("bad jaas: %v", err)
	}
	if err := c.Set("ssl.key.password", "x"); err != nil {
		t.Fatal(err)
	}
}

const secret = "s3cr3t-Pa55"

// TestParseJAAS: Kafka's JaasConfig syntax (quoted values with escapes,
// bare words, newlines); a missing ';', an open quote, a wrong flag, a
// missing '=', two modules and a lone module word are refused, and no
// error quotes the password.
func TestParseJAAS(t *testing.T) {
	good := []struct {
		in         string
		module     string
		user, pass string
	}{
		{`org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="` + secret + `";`,
			"org.apache.kafka.common.security.plain.PlainLoginModule", "alice", secret},
		{"org.apache.kafka.common.security.scram.ScramLoginModule required\n  username=bob\n  password=\"a \\\"quoted\\\" ; = pass\" ;",
			"org.apache.kafka.common.security.scram.ScramLoginModule", "bob", `a "quoted" ; = pass`},
	}
	for _, g := range good {
		e, err := ParseJAAS(g.in)
		if err != nil {
			t.Fatalf("%q: %v", g.in, err)
		}
		if e.LoginModule != g.module || e.Options["username"] != g.user || e.Options["password"] != g.pass {
			t.Fatalf("%q: got %+v", g.in, e)
		}
	}
	bad := []string{
		``,
		`org.apache.kafka.common.security.plain.PlainLoginModule`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required user_a="` + secret + `" user_b;`, // no value
		`=x required a=b;`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="` + secret + `"`,     // no ;
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="` + secret,           // open quote
		`org.apache.kafka.common.security.plain.PlainLoginModule always username="alice" password="` + secret + `";`,      // flag
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password ` + secret + `;`,      // no =
		`org.apache.kafka.common.security.plain.PlainLoginModule required password="` + secret + `"; other required x=y;`, // two
	}
	for _, b := range bad {
		_, err := ParseJAAS(b)
		if err == nil {
			t.Fatalf("%q: accepted", b)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("%q: the error quotes the password: %v", b, err)
		}
	}
}

// log.writeback.bytes and log.writeback.drop.behind.bytes are
// minibroker's own: LONGs, broker settings with no topic-level config.
// The write-behind is at least 0 (0: off), 8 MiB by default; the
// drop-behind at least -1 (-1, the default: decided by the machine;
// 0: off).
func TestWritebackBytesSetting(t *testing.T) {
	for _, s := range []struct {
		name     string
		def      int64
		ok, bads []string
	}{
		{"log.writeback.bytes", 8 << 20, []string{"0", "33554432"}, []string{"-1", "8MiB", ""}},
		{"log.writeback.drop.behind.bytes", -1, []string{"-1", "0", "33554432"}, []string{"-2", "64MiB", ""}},
	} {
		c := Default()
		if got := c.Int64(s.name); got != s.def {
			t.Fatalf("%s: default %d, want %d", s.name, got, s.def)
		}
		for _, ok := range s.ok {
			if err := c.Set(s.name, ok); err != nil || fmt.Sprint(c.Int64(s.name)) != ok {
				t.Errorf("%s=%s: %v", s.name, ok, err)
			}
		}
		for _, bad := range s.bads {
			if err := c.Set(s.name, bad); err == nil {
				t.Errorf("%s=%q accepted", s.name, bad)
			}
		}
		if st, ok := Lookup(s.name); !ok || st.Topic != "" || st.Ignored {
			t.Fatalf("%s: lookup: %+v %v", s.name, st, ok)
		}
	}
}
