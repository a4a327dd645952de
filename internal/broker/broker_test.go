package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/internal/config"
	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/psm"
)

func newTestBroker(t *testing.T, dir string, sets ...string) *Broker {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = dir, "127.0.0.1:0", ""
	for _, kv := range sets {
		if err := cfg.SetPair(kv); err != nil {
			t.Fatal(err)
		}
	}
	b, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func closeBroker(t *testing.T, b *Broker) {
	t.Helper()
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestTopicNameRules(t *testing.T) {
	for name, ok := range map[string]bool{
		"orders": true, "a.b-c_d": true, strings.Repeat("x", 249): true,
		"": false, ".": false, "..": false, "has space": false, "slash/": false, strings.Repeat("x", 250): false,
	} {
		if err := validTopicName(name); (err == nil) != ok {
			t.Errorf("validTopicName(%q) = %v", name, err)
		}
	}
}

// Topics, their ids and configs survive a restart; a second broker on the
// same data dir is refused while the first runs.
func TestTopicsPersistAndDataDirLock(t *testing.T) {
	dir := t.TempDir()
	b := newTestBroker(t, dir)
	tp, err := b.CreateTopic("orders", 3, map[string]string{"retention.ms": "1000"}, [16]byte{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic("orders", 1, nil, [16]byte{}, false); !errors.Is(err, errTopicExists) {
		t.Fatalf("duplicate: %v", err)
	}
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = dir, "127.0.0.1:0", ""
	if _, err := New(Options{Config: cfg}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second broker on the same dir: %v", err)
	}
	closeBroker(t, b)

	b = newTestBroker(t, dir)
	defer closeBroker(t, b)
	got, ok := b.Topic("orders")
	if !ok || got.ID != tp.ID || len(got.Partitions) != 3 || got.Configs["retention.ms"] != "1000" {
		t.Fatalf("after restart: %+v", got)
	}
	if v, src := b.topicValue(got.Configs, "retention.ms"); v != "1000" || src != sourceTopic {
		t.Fatalf("override lost: %s %v", v, src)
	}
	if v, src := b.topicValue(got.Configs, "segment.bytes"); v != "1073741824" || src != sourceDefault {
		t.Fatalf("default: %s %v", v, src)
	}
}

func TestTopicConfigValidation(t *testing.T) {
	b := newTestBroker(t, t.TempDir())
	defer closeBroker(t, b)
	for _, cfgs := range []map[string]string{
		{"no.such.config": "1"}, {"retention.ms": "soon"}, {"cleanup.policy": "shred"}, {"message.timestamp.type": "Now"},
	} {
		if _, err := b.CreateTopic("t", 1, cfgs, [16]byte{}, false); !errors.Is(err, errInvalidConfig) {
			t.Errorf("%v accepted: %v", cfgs, err)
		}
	}
	if _, err := b.CreateTopic("t", 0, nil, [16]byte{}, false); !errors.Is(err, errInvalidParts) {
		t.Fatalf("0 partitions: %v", err)
	}
}

func TestClusterIDMismatchRefused(t *testing.T) {
	dir := t.TempDir()
	closeBroker(t, newTestBroker(t, dir))
	meta, _ := os.ReadFile(filepath.Join(dir, metaFile))
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen, cfg.ClusterID = dir, "127.0.0.1:0", "", "someone-else"
	if _, err := New(Options{Config: cfg}); err == nil || !strings.Contains(err.Error(), "contradicts") {
		t.Fatalf("mismatch accepted: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, metaFile))
	if string(meta) != string(after) {
		t.Fatal("meta.properties rewritten")
	}
}

// Every internal error that reaches a client has its Kafka code.
func TestErrorTable(t *testing.T) {
	for err, want := range map[error]*kerr.Error{
		partition.ErrCorrupt:                  kerr.CorruptMessage,
		&partition.MirroredError{Mirror: "m"}: kerr.PolicyViolation,
		psm.ErrOutOfOrderSequence:             kerr.OutOfOrderSequenceNumber,
		psm.ErrInvalidProducerEpoch:           kerr.InvalidProducerEpoch,
		mlog.ErrStorage:                       kerr.KafkaStorageError,
		mlog.ErrOffsetOutOfRange:              kerr.OffsetOutOfRange,
		errUnknownTopic:                       kerr.UnknownTopicOrPartition,
		errors.New("something nobody mapped"): kerr.UnknownServerError,
	} {
		if got := errorCode(err); got != want.Code {
			t.Errorf("%v → %d, want %d (%s)", err, got, want.Code, want.Message)
		}
	}
}
