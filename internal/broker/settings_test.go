package broker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/internal/config"
	mlog "github.com/minibroker/minibroker/internal/log"
)

// Start-up refuses every setting the table refuses, however the config
// was built (a Go caller filling Kafka directly included), naming the key,
// the value and the rule; and a meta.properties of an unknown version.
// Negative control: with the check removed (skipValidation) the same
// configs start, with the value bent or the node unusable.
func TestStartRefusesBadSettings(t *testing.T) {
	type startCase struct {
		name   string
		edit   func(*config.Config)
		meta   string // meta.properties to write first, if any
		want   []string
		bended func(t *testing.T, b *Broker) // what a start without the check shows
	}
	cases := []startCase{
		{name: "segment bytes", edit: func(c *config.Config) { c.Kafka["log.segment.bytes"] = "3000000000" },
			want: []string{"log.segment.bytes", "3000000000", "not a number of type INT"},
			bended: func(t *testing.T, b *Broker) {
				// More than the log's int32 positions hold: it clamps.
				if got := b.partitionConfig(nil).Log.SegmentBytes; got != 3000000000 {
					t.Errorf("segment.bytes %d", got)
				}
			}},
		{name: "request size", edit: func(c *config.Config) {
			c.Kafka["socket.request.max.bytes"] = "3000000000"
			c.Kafka["queued.max.request.bytes"] = "-1" // else refused for another reason without the check
		},
			want: []string{"socket.request.max.bytes", "3000000000", "not a number of type INT"},
			bended: func(t *testing.T, b *Broker) {
				if got := b.cfg.Int32("socket.request.max.bytes"); got != 2147483647 {
					t.Errorf("want the clamp the check prevents, got %d", got)
				}
			}},
		{name: "timestamp type", edit: func(c *config.Config) { c.Kafka["log.message.timestamp.type"] = "Bogus" },
			want: []string{"log.message.timestamp.type", "Bogus", "CreateTime, LogAppendTime"},
			bended: func(t *testing.T, b *Broker) {
				if b.partitionConfig(nil).LogAppendTime {
					t.Error("Bogus read as LogAppendTime")
				}
			}},
		{name: "node id", edit: func(c *config.Config) { c.NodeID = -1 },
			want: []string{"node-id", "-1", "at least 0"},
			bended: func(t *testing.T, b *Broker) {
				if b.nodeID != -1 {
					t.Errorf("node id %d", b.nodeID)
				}
			}},
		{name: "meta version", meta: "version=7\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\nnode.id=0\n",
			want:   []string{"meta.properties", "version=7", "version 1"},
			bended: func(t *testing.T, b *Broker) {}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := func(skip bool) (*Broker, error) {
				dir := t.TempDir()
				if c.meta != "" {
					if err := os.WriteFile(filepath.Join(dir, metaFile), []byte(c.meta), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				cfg := config.Default()
				cfg.DataDir, cfg.Listen, cfg.HTTPListen = dir, "127.0.0.1:0", ""
				if c.edit != nil {
					c.edit(&cfg)
				}
				return newBroker(Options{Config: cfg}, func(b *Broker) { b.knobs.skipValidation = skip })
			}
			b, err := start(false)
			if err == nil {
				b.Close(context.Background())
				t.Fatal("started")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			// Negative control: without the check it starts.
			b, err = start(true)
			if err != nil {
				t.Fatalf("without the check: %v", err)
			}
			defer b.Close(context.Background())
			c.bended(t, b)
		})
	}
}

// log.writeback.drop.behind.bytes reaches every partition's log: -1 (the
// default) as what this machine's free page reporting decides, any other
// value as it is.
func TestDropBehindSetting(t *testing.T) {
	for set, want := range map[string]int64{"": mlog.AutoDropBehind(), "-1": mlog.AutoDropBehind(), "0": 0, "33554432": 32 << 20} {
		var sets []string
		if set != "" {
			sets = append(sets, "log.writeback.drop.behind.bytes="+set)
		}
		b := newTestBroker(t, t.TempDir(), sets...)
		if got := b.partitionConfig(nil).Log.DropBehindBytes; got != want {
			t.Errorf("setting %q: the log's drop-behind %d, want %d", set, got, want)
		}
		closeBroker(t, b)
	}
}
