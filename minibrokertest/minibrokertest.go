// Package minibrokertest starts real minibroker clusters inside Go tests:
// the same broker `minibroker serve` runs (one constructor for both), on a
// temporary directory and a port the OS picks, in milliseconds.
//
//	c := minibrokertest.Start(t, minibrokertest.Topic("orders", 3))
//	cl, _ := kgo.NewClient(kgo.SeedBrokers(c.Addr()))
//
// Nothing is global: parallel tests each get their own clusters.
package minibrokertest

import (
	"context"
	"maps"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/minibroker/minibroker/internal/broker"
	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/fault"
)

// TB is the subset of testing.TB the package needs; *testing.T and
// *testing.B satisfy it.
type TB interface {
	Helper()
	TempDir() string
	Cleanup(func())
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// Option configures a cluster.
type Option func(*options)

type options struct {
	topics  []topicSpec
	sets    [][2]string
	dataDir string
	logger  *zap.Logger
	logToT  bool
	http    bool
}

type topicSpec struct {
	name       string
	partitions int32
	configs    map[string]string
}

// Topic pre-creates a topic with the given partition count.
func Topic(name string, partitions int32) Option {
	return func(o *options) { o.topics = append(o.topics, topicSpec{name: name, partitions: partitions}) }
}

// TopicWithConfigs pre-creates a topic with topic-level configs.
func TopicWithConfigs(name string, partitions int32, configs map[string]string) Option {
	return func(o *options) {
		o.topics = append(o.topics, topicSpec{name: name, partitions: partitions, configs: configs})
	}
}

// Set sets a Kafka-named broker setting, e.g. Set("log.segment.bytes", "1048576").
func Set(name, value string) Option {
	return func(o *options) { o.sets = append(o.sets, [2]string{name, value}) }
}

// DataDir runs the cluster on dir instead of a fresh temporary directory,
// so a later Start on the same dir sees the same data.
func DataDir(dir string) Option { return func(o *options) { o.dataDir = dir } }

// Logger sends the broker's logs to l.
func Logger(l *zap.Logger) Option { return func(o *options) { o.logger = l } }

// LogToTest sends the broker's logs through t.Log.
func LogToTest() Option { return func(o *options) { o.logToT = true } }

// HTTP also starts the HTTP listener (metrics, health, admin API) on a
// free port.
func HTTP() Option { return func(o *options) { o.http = true } }

// Cluster is a running single-node minibroker cluster.
type Cluster struct {
	t    TB
	opts options
	cfg  config.Config

	// faults outlives the brokers of restarts: a fault set before Kill
	// still holds after Revive.
	faults *fault.Registry

	mu     sync.Mutex
	b      *broker.Broker
	addr   string
	closed bool
}

// Start starts a cluster and registers Close with t.Cleanup. It fails the
// test if the broker cannot start.
func Start(t TB, opts ...Option) *Cluster {
	t.Helper()
	c, err := StartE(t, opts...)
	if err != nil {
		t.Fatalf("minibrokertest: %v", err)
	}
	return c
}

// StartE is Start returning the error instead of failing the test.
func StartE(t TB, opts ...Option) (*Cluster, error) {
	c := &Cluster{t: t}
	for _, o := range opts {
		o(&c.opts)
	}
	if c.opts.dataDir == "" {
		c.opts.dataDir = t.TempDir()
	}
	cfg := config.Default()
	cfg.DataDir = c.opts.dataDir
	cfg.Listen = "127.0.0.1:0"
	cfg.HTTPListen = ""
	if c.opts.http {
		cfg.HTTPListen = "127.0.0.1:0"
	}
	// Tests want a group to form at once, as kfake does.
	cfg.Kafka["group.initial.rebalance.delay.ms"] = "0"
	// Fault injection is on in tests (Cluster.Fault); Set may turn it off.
	cfg.Kafka["faults.enable"] = "true"
	// One partition for each coordinator topic, not Kafka's 50: creating
	// 100 partitions (directories, checkpoint files, fsyncs) took an empty
	// broker's start from about 33 ms to 105-165 ms. A test that wants
	// Kafka's counts sets them (Set).
	cfg.Kafka["offsets.topic.num.partitions"] = "1"
	cfg.Kafka["transaction.state.log.num.partitions"] = "1"
	cfg.Kafka["share.coordinator.state.topic.num.partitions"] = "1"
	for _, kv := range c.opts.sets {
		if err := cfg.Set(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	c.cfg = cfg
	if err := c.start(); err != nil {
		return nil, err
	}
	for _, ts := range c.opts.topics {
		if _, err := c.b.CreateTopic(ts.name, ts.partitions, ts.configs, [16]byte{}, false); err != nil {
			c.Close()
			return nil, err
		}
	}
	t.Cleanup(c.Close)
	return c, nil
}

func (c *Cluster) logger() *zap.Logger {
	switch {
	case c.opts.logger != nil:
		return c.opts.logger
	case c.opts.logToT:
		if tt, ok := c.t.(zaptest.TestingT); ok {
			return zaptest.NewLogger(tt)
		}
	}
	return zap.NewNop()
}

func (c *Cluster) start() error {
	if c.faults == nil {
		c.faults = fault.NewRegistry(nil)
	}
	b, err := broker.New(broker.Options{Config: c.cfg, Logger: c.logger(), Faults: c.faults})
	if err != nil {
		return err
	}
	b.Serve()
	c.mu.Lock()
	c.b, c.addr, c.closed = b, b.Addr(), false
	c.mu.Unlock()
	// Later restarts reuse the ports so clients holding the addresses
	// reconnect to the same cluster.
	c.cfg.Listen = b.Addr()
	if c.cfg.String("listeners") != "" {
		var bound []string
		for _, l := range b.Listeners() {
			bound = append(bound, l.Name+"://"+l.Bound)
		}
		kafka := maps.Clone(c.cfg.Kafka) // the running broker reads the old map
		kafka["listeners"] = strings.Join(bound, ",")
		c.cfg.Kafka = kafka
	}
	if c.cfg.HTTPListen != "" {
		c.cfg.HTTPListen = b.HTTPAddr()
	}
	return nil
}

// Addr is the Kafka bootstrap address, host:port.
func (c *Cluster) Addr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addr
}

// ListenerAddr is the advertised address of the named listener (as in
// the `listeners` setting, e.g. "SASL_SSL"), or "" when there is none.
func (c *Cluster) ListenerAddr(name string) string {
	for _, l := range c.Broker().Listeners() {
		if strings.EqualFold(l.Name, name) {
			return l.Advertised
		}
	}
	return ""
}

// HTTPAddr is the HTTP listener's address ("" without the HTTP option).
func (c *Cluster) HTTPAddr() string { return c.Broker().HTTPAddr() }

// ClusterID is the cluster's id.
func (c *Cluster) ClusterID() string { return c.Broker().ClusterID() }

// DataDir is where the cluster keeps its data.
func (c *Cluster) DataDir() string { return c.opts.dataDir }

// Broker is the running broker, for the project's own tests.
func (c *Cluster) Broker() *broker.Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b
}

// Restart shuts the broker down cleanly and starts it again on the same
// data directory and port.
func (c *Cluster) Restart() {
	c.t.Helper()
	c.stop(false)
	c.restart()
}

// Kill stops the broker as a crash would: connections are cut and files
// closed with no clean-shutdown marker, no final snapshot or flush (what
// was written stays in the page cache, as after kill -9). Start it again
// with Restart... use Revive.
func (c *Cluster) Kill() {
	c.t.Helper()
	c.stop(true)
}

// Revive starts a killed or closed cluster again on the same data and port.
func (c *Cluster) Revive() {
	c.t.Helper()
	c.restart()
}

func (c *Cluster) restart() {
	var err error
	// The port may linger briefly after close, and so may the data-dir
	// lock: a process forked by another test (kcat, go build) holds a copy
	// of the lock's descriptor until it execs.
	for i := 0; i < 50; i++ {
		if err = c.start(); err == nil {
			return
		}
		if _, ok := err.(*net.OpError); !ok && !isAddrInUse(err) && !isLockBusy(err) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("minibrokertest: restart: %v", err)
}

func (c *Cluster) stop(crash bool) {
	c.mu.Lock()
	b, closed := c.b, c.closed
	c.closed = true
	c.mu.Unlock()
	if closed || b == nil {
		return
	}
	if crash {
		b.Kill()
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			c.t.Logf("minibrokertest: close: %v", err)
		}
	}
	c.checkDefects(b)
}

// checkDefects fails the test when the broker recovered a panic in a
// handler or an authorization rule could not read a request: both are
// minibroker bugs, whatever the test was about (a cluster from New
// returns no error for them and is not checked).
func (c *Cluster) checkDefects(b *broker.Broker) {
	if _, ok := c.t.(*standalone); ok {
		return
	}
	if d := b.Defects(); len(d) > 0 {
		c.t.Fatalf("minibrokertest: the broker met defects (a minibroker bug; see its log):\n  %s", strings.Join(d, "\n  "))
	}
}

// Close shuts the cluster down cleanly; it is registered with t.Cleanup
// and safe to call more than once. A cluster from New also removes its
// temporary data directory.
func (c *Cluster) Close() {
	c.stop(false)
	if s, ok := c.t.(*standalone); ok {
		s.removeDirs()
	}
}

var _ TB = (testing.TB)(nil)
