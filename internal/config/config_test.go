package config

import (
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
	for _, s := range settings {
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
