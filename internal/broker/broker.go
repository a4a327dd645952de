// Package broker wires minibroker together: it owns the topic registry and
// the Kafka API handlers (one file per API, named after its key), and turns
// internal errors into Kafka error codes. It never touches files directly:
// partitions and coordinators do.
package broker

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/acl"
	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/fault"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/psm"
	"github.com/minibroker/minibroker/internal/quota"
	"github.com/minibroker/minibroker/internal/security"
	"github.com/minibroker/minibroker/internal/share"
	"github.com/minibroker/minibroker/internal/vfs"
)

// Options are a broker's collaborators. Only Config is required.
type Options struct {
	Config config.Config
	Logger *zap.Logger
	FS     vfs.FS
	// Registry receives the broker's metrics; nil creates a private one.
	Registry *prometheus.Registry
	// Mirror tunes mirrors; its test seams (unexported, set only through
	// mirror.WithTestHooks) are never set from config.
	Mirror mirror.Options
	// HTTP bounds the HTTP listener's clients (zero: DefaultHTTPLimits).
	HTTP HTTPLimits
	// Faults is the fault registry to use when faults.enable is on (a
	// test cluster keeps one across restarts); nil makes a new one.
	Faults *fault.Registry
	// AdminAuthorizer authorizes the HTTP admin API's principals for
	// CLUSTER ALTER and DESCRIBE; nil: the ACLs when authorizer.class.name
	// is set, else every authenticated principal is allowed.
	AdminAuthorizer ClusterAuthorizer

	// private are the test seams (knobs.go), copied to Broker.knobs:
	// unexported, so no config file, flag or API sets them; the zero
	// value is production. Code outside this package reaches them only
	// through WithTestHooks.
	private knobs
}

// Broker is one running minibroker node.
type Broker struct {
	cfg        config.Config
	logger     *zap.Logger
	fs         vfs.FS
	dataDir    string
	clusterID  string
	nodeID     int32
	advHost    string
	advPort    int32
	registry   *prometheus.Registry
	metrics    *Metrics
	cleaner    *cleanerManager // the log cleaner's threads (cleaner.go)
	psmMetrics *psm.Metrics
	pids       *coordinator.ProducerIDs
	txns       *coordinator.Transactions
	groups     *coordinator.Groups // the group coordinator, opened after the topics
	shares     *share.Coordinator  // share groups (share_groups.go)
	shareStore *share.TopicStore   // their state in __share_group_state
	mirrors    *mirror.Manager
	faults     *fault.Registry // nil unless faults.enable
	lock       *os.File        // data-dir lock
	scram      *security.ScramStore
	authz      *acl.Authorizer // nil: authorizer.class.name unset, everything allowed
	// fetchSessions is the fetch session cache (KIP-227, fetch_session.go).
	fetchSessions *fetchSessionCache
	quotas        *quota.Manager // client quotas (quotas.go)

	server *protocol.Server
	// frontMetrics are the server's series (recovered panics among them,
	// read by Defects).
	frontMetrics *protocol.Metrics
	listeners    []*boundListener // the Kafka listeners (listeners.go)
	httpLn       net.Listener
	httpSrv      *http.Server
	httpLim      HTTPLimits
	httpAuth     *adminAuth // the HTTP listener's security (httpauth.go)
	handlers     map[int16]api
	admin        map[string]http.Handler
	telemetry    telemetryClients // GetTelemetrySubscriptions / PushTelemetry (telemetry.go)
	// resourceConfigs: GROUP and CLIENT_METRICS configs (resource_configs.go).
	resourceConfigs resourceConfigs
	features        features // KIP-584 finalized levels (features.go)

	// adminMu serializes changes to the registry (create, grow, delete
	// a topic, alter its configs) and so every write of topics.json, as
	// Kafka's controller does; it is held while partitions are created
	// and topics.json is written and fsynced, b.mu only to make the
	// change visible (commitTopics). Every writer of topics, topicsByID,
	// a Topic's Partitions slice and Configs holds both; a reader holds
	// either. Lock order: adminMu, then mu, then a partition's locks
	// (Close calls partitions holding mu; a config update calls them
	// holding adminMu only).
	adminMu    sync.Mutex
	mu         sync.RWMutex // guards topics, topicsByID and each Topic's Partitions and Configs
	topics     map[string]*Topic
	topicsByID map[[16]byte]*Topic
	// topicGen counts registry changes (commitTopics); topicImg is the
	// group coordinator's view of the registry at some generation,
	// rebuilt by topicImage when stale (consumer_group_topics.go).
	topicGen atomic.Uint64
	topicImg atomic.Pointer[coordinator.TopicImage]

	stop     chan struct{}
	bg       sync.WaitGroup
	stopOnce sync.Once

	// knobs are the test-only seams (knobs.go); the zero value is
	// production's.
	knobs knobs
}

// New opens the data directory (creating meta.properties on first start),
// opens every topic, and binds the Kafka and HTTP listeners. Call Serve.
func New(opts Options) (*Broker, error) {
	return newBroker(opts, nil)
}

// newBroker is New; seams, if set, adjusts the broker (its knobs, which
// start as opts.private) before it opens anything (tests only).
func newBroker(opts Options, seams func(*Broker)) (*Broker, error) {
	cfg := opts.Config
	cfg.Kafka = maps.Clone(cfg.Kafka) // the caller's map is not the broker's
	if err := cfg.ApplyKafkaIdentity(); err != nil {
		return nil, fmt.Errorf("refusing to start: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
		opts.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	b := &Broker{
		cfg: cfg, logger: opts.Logger, fs: opts.FS, dataDir: cfg.DataDir, nodeID: cfg.NodeID,
		registry: opts.Registry, topics: map[string]*Topic{}, topicsByID: map[[16]byte]*Topic{},
		stop: make(chan struct{}), httpLim: opts.HTTP.withDefaults(), knobs: opts.private,
	}
	if seams != nil {
		seams(b)
	}
	if !b.knobs.skipValidation {
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("refusing to start: %w", err)
		}
	}
	if ignored := cfg.IgnoredSet(); len(ignored) > 0 {
		b.logger.Info("Kafka settings accepted and ignored (they mean nothing on one node; docs/SETTINGS.md)", zap.Strings("settings", ignored))
	}
	b.metrics = newMetrics(b, opts.Registry)
	b.fetchSessions = newFetchSessionCache(func() int { return int(b.cfg.Int32("max.incremental.fetch.session.cache.slots")) },
		cmp.Or(b.knobs.fetchSessionEviction, defaultFetchSessionEviction), cmp.Or(b.knobs.fetchSessionMaxPartitions, maxFetchSessionPartitions), opts.Registry)
	b.cleaner = newCleanerManager(b)
	opts.Registry.MustRegister(cleanerCollector{b.cleaner})
	b.psmMetrics = psm.NewMetrics(opts.Registry)
	b.handlers = b.apis()

	if err := b.fs.MkdirAll(b.dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := b.lockDataDir(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			if b.mirrors != nil {
				b.mirrors.Close()
			}
			b.closeFiles()
		}
	}()
	if err := b.loadMeta(); err != nil {
		return nil, err
	}
	if err := b.openBrokerConfigs(); err != nil {
		return nil, err
	}
	pids, err := coordinator.OpenProducerIDs(b.fs, b.dataDir)
	if err != nil {
		return nil, err
	}
	b.pids = pids
	start := time.Now()
	if err := b.loadTopics(); err != nil {
		return nil, err
	}
	if err := b.ensureInternalTopics(); err != nil {
		return nil, err
	}
	b.metrics.Partitions.Set(float64(b.partitionCount()))
	gopts := coordinator.GroupsOptions{
		FS: b.fs, Dir: b.dataDir, Config: groupConfig(cfg), Logger: b.logger.Named("groups"),
		Metrics: coordinator.NewGroupMetrics(opts.Registry), Topics: b.topicImage,
		OffsetsTopic: b.offsetsTopicLog(),
	}
	if b.knobs.legacyGroupLog {
		gopts.OffsetsTopic = nil
	}
	gopts = coordinator.WithTestHooks(gopts, b.knobs.groupHooks)
	if b.groups, err = coordinator.OpenGroups(gopts); err != nil {
		return nil, fmt.Errorf("group coordinator: %w", err)
	}
	if err := b.openShareGroups(); err != nil {
		return nil, fmt.Errorf("share groups: %w", err)
	}
	if b.txns, err = coordinator.OpenTransactions(coordinator.TxnOptions{
		FS: b.fs, Dir: b.dataDir, Topic: b.txnStateTopicLog(), ProducerIDs: b.pids, Markers: txnMarkers{b}, Offsets: b.groups,
		Logger: b.logger.Named("txn"), Registry: opts.Registry,
		Config: coordinator.TxnConfig{MaxTimeoutMs: cfg.Int32("transaction.max.timeout.ms"),
			IDExpirationMs: cfg.Int64("transactional.id.expiration.ms")},
	}); err != nil {
		return nil, fmt.Errorf("transaction coordinator: %w", err)
	}
	b.openFaults(opts.Faults)
	if b.faults != nil {
		opts.Mirror.SourceDialer = b.faults.SourceDialer
	}
	// Before the mirrors: they sync the source's ACLs into it.
	if b.authz, err = openAuthorizer(b.fs, b.dataDir, cfg); err != nil {
		return nil, err
	}
	if err := b.openMirrors(opts.Mirror); err != nil {
		return nil, err
	}
	b.logger.Info("opened data dir", zap.String("dir", b.dataDir), zap.String("cluster_id", b.clusterID),
		zap.Int("topics", len(b.topics)), zap.Int("partitions", b.partitionCount()),
		zap.Int("recovery_threads", b.recoveryThreads()), zap.Duration("took", time.Since(start)))
	b.logDropBehind()

	if b.scram, err = security.OpenScramStore(b.fs, b.dataDir); err != nil {
		return nil, err
	}
	if err := b.resourceConfigs.open(b.fs, b.dataDir); err != nil {
		return nil, err
	}
	if err := b.features.open(b.fs, b.dataDir); err != nil {
		return nil, err
	}
	quotaStore, err := quota.OpenStore(b.fs, b.dataDir)
	if err != nil {
		return nil, err
	}
	b.quotas = quota.NewManager(quotaConfig(cfg), quotaStore, nil)
	opts.Registry.MustRegister(b.quotas)
	if err := b.openListeners(); err != nil {
		return nil, err
	}
	if cfg.HTTPListen != "" {
		if b.httpAuth, err = newAdminAuth(cfg, b.logger.Named("admin")); err != nil {
			b.closeListeners()
			return nil, fmt.Errorf("admin API: %w", err)
		}
		b.httpAuth.authorizer, b.httpAuth.skipBrowserChecks = opts.AdminAuthorizer, b.knobs.skipAdminBrowserChecks
		if b.httpAuth.authorizer == nil && b.authz != nil {
			// The Kafka ACLs authorize the admin API's principals too.
			b.httpAuth.authorizer = aclClusterAuthorizer{b.authz}
		}
		if b.httpLn, err = net.Listen("tcp", cfg.HTTPListen); err != nil {
			b.closeListeners()
			return nil, fmt.Errorf("http listener: %w", err)
		}
		if err = b.httpAuth.checkBind(b.httpLn.Addr(), cfg.Bool("admin.allow.unauthenticated.remote")); err != nil {
			b.closeListeners()
			b.httpLn.Close()
			return nil, fmt.Errorf("refusing to start: %w", err)
		}
	}
	pc := protocol.Config{
		MaxRequestSize:    cfg.Int32("socket.request.max.bytes"),
		MaxConnections:    int(cfg.Int32("max.connections")),
		IdleTimeout:       time.Duration(cfg.Int64("connections.max.idle.ms")) * time.Millisecond,
		QueuedMaxRequests: int(cfg.Int32("queued.max.requests")),
	}
	if pc.QueuedMaxRequestBytes, err = queuedMaxRequestBytes(cfg); err != nil {
		b.closeListeners()
		if b.httpLn != nil {
			b.httpLn.Close()
		}
		return nil, err
	}
	if pc.MaxConnectionsPerIP, pc.MaxConnectionsPerIPOverrides, err = connectionLimits(cfg); err != nil {
		b.closeListeners()
		if b.httpLn != nil {
			b.httpLn.Close()
		}
		return nil, err
	}
	if !b.knobs.skipQuotaEnforcement {
		pc.ConnectionThrottle = b.quotas.ConnectionThrottle
	}
	b.frontMetrics = protocol.NewMetrics(opts.Registry)
	b.server = protocol.NewServer(pc, b, b.logger.Named("protocol"), b.frontMetrics)
	ok = true
	return b, nil
}

// queuedMaxRequestBytes checks queued.max.request.bytes against
// socket.request.max.bytes: a bound a request of the largest size cannot
// be read under would leave such a request waiting forever.
func queuedMaxRequestBytes(cfg config.Config) (int64, error) {
	v := cfg.Int64("queued.max.request.bytes")
	if v == -1 {
		return -1, nil
	}
	least := protocol.MinQueuedMaxRequestBytes(cfg.Int32("socket.request.max.bytes"))
	if v < least {
		return 0, fmt.Errorf("setting queued.max.request.bytes=%d: must be -1 (unbounded) or at least %d "+
			"(1.5 × socket.request.max.bytes + 2 MiB: a frame's buffer grows as its bytes arrive)", v, least)
	}
	return v, nil
}

// connectionLimits turns max.connections.per.ip and its overrides into
// the listener's limits. As Kafka (ConnectionQuotas), an override's host
// name is resolved once, at start-up; minibroker applies it to every
// address the name resolves to where Kafka takes the first. A limit of 0
// admits none (Kafka requires overrides then).
func connectionLimits(cfg config.Config) (int, map[string]int, error) {
	perIP := int(cfg.Int32("max.connections.per.ip"))
	raw, err := config.ParseConnectionOverrides(cfg.String("max.connections.per.ip.overrides"))
	if err != nil {
		return 0, nil, fmt.Errorf("max.connections.per.ip.overrides: %w", err)
	}
	if perIP == 0 {
		if len(raw) == 0 {
			return 0, nil, errors.New("max.connections.per.ip can be 0 only if max.connections.per.ip.overrides is set")
		}
		perIP = protocol.NoConnections
	}
	overrides := map[string]int{}
	for host, n := range raw {
		if n <= 0 {
			n = protocol.NoConnections
		}
		if ip := net.ParseIP(host); ip != nil {
			overrides[ip.String()] = n
			continue
		}
		ips, err := net.LookupIP(host)
		if err != nil {
			return 0, nil, fmt.Errorf("max.connections.per.ip.overrides: %w", err)
		}
		for _, ip := range ips {
			overrides[ip.String()] = n
		}
	}
	return perIP, overrides, nil
}

// Serve runs the Kafka and HTTP listeners and background work; it returns
// at once.
func (b *Broker) Serve() {
	for _, l := range b.listeners {
		b.bg.Add(1)
		go func() { defer b.bg.Done(); b.server.ServeListener(l.ln, l.proto) }()
	}
	if b.httpLn != nil {
		b.httpSrv = b.newHTTPServer(b.httpLim)
		var ln net.Listener = &capListener{Listener: b.httpLn, max: b.httpLim.MaxConnections, rejected: b.metrics.HTTPRejected.Inc}
		if b.httpLim.headerTimeoutOnly {
			ln = b.httpLn
		}
		if b.httpAuth.tls != nil { // outside the cap, so that requests see the TLS state
			ln = tls.NewListener(ln, b.httpAuth.tls)
		}
		b.bg.Add(1)
		go func() { defer b.bg.Done(); b.httpSrv.Serve(ln) }()
	}
	b.bg.Add(1)
	go func() { defer b.bg.Done(); b.retentionLoop() }()
	b.bg.Add(1)
	go func() { defer b.bg.Done(); b.shareLoop() }()
	b.cleaner.start()
	b.startStaticMirrors()
	b.txns.Start()
	ls := b.Listeners()
	for _, l := range ls {
		b.logger.Info("listening", zap.String("listener", l.Name), zap.String("security_protocol", l.Protocol),
			zap.String("kafka", l.Bound), zap.String("advertised", l.Advertised))
	}
	b.warnWildcardHTTP()
	// One line with the first listener's addresses, which scripts read.
	b.logger.Info("serving", zap.String("kafka", ls[0].Bound), zap.String("advertised", ls[0].Advertised),
		zap.Stringer("http", addrOrNil(b.httpLn)))
}

type nilAddr struct{}

func (nilAddr) String() string { return "" }

func addrOrNil(l net.Listener) fmt.Stringer {
	if l == nil {
		return nilAddr{}
	}
	return l.Addr()
}

// ListenAddr is the address the first Kafka listener is bound to; Addr is
// the one it advertises to clients (they differ behind a proxy).
func (b *Broker) ListenAddr() string { return b.listeners[0].ln.Addr().String() }

// Addr is the first listener's advertised Kafka address, host:port.
func (b *Broker) Addr() string { return net.JoinHostPort(b.advHost, strconv.Itoa(int(b.advPort))) }

// HTTPAddr is the HTTP listener's address, or "".
func (b *Broker) HTTPAddr() string {
	if b.httpLn == nil {
		return ""
	}
	return b.httpLn.Addr().String()
}

// ClusterID is the cluster id stored in meta.properties.
func (b *Broker) ClusterID() string { return b.clusterID }

// NodeID is this node's id (node.id), the only replica of every partition.
func (b *Broker) NodeID() int32 { return b.nodeID }

// DataDir is the broker's data directory.
func (b *Broker) DataDir() string { return b.dataDir }

// Registry is the broker's metrics registry.
func (b *Broker) Registry() *prometheus.Registry { return b.registry }

// retentionLoop runs log retention and producer expiration on their
// Kafka intervals.
func (b *Broker) retentionLoop() {
	ms := func(name string) time.Duration { return time.Duration(b.cfg.Int64(name)) * time.Millisecond }
	retention := time.NewTicker(ms("log.retention.check.interval.ms"))
	defer retention.Stop()
	expiry := time.NewTicker(ms("producer.id.expiration.check.interval.ms"))
	defer expiry.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-retention.C:
			b.applyRetention()
		case <-expiry.C:
			b.expireProducers()
		}
	}
}

func (b *Broker) expireProducers() {
	for _, name := range b.TopicNames() {
		if t, ok := b.Topic(name); ok {
			for _, p := range b.partitions(t) {
				if n := p.ExpireProducers(); n > 0 {
					b.logger.Debug("expired idle producers", zap.String("dir", p.Dir()), zap.Int("producers", n))
				}
			}
		}
	}
}

func (b *Broker) applyRetention() {
	for _, name := range b.TopicNames() {
		t, ok := b.Topic(name)
		if !ok {
			continue
		}
		for _, p := range b.partitions(t) {
			if n, err := p.ApplyRetention(); err != nil {
				b.logger.Warn("retention", zap.String("dir", p.Dir()), zap.Error(err))
			} else if n > 0 {
				b.logger.Info("retention deleted segments", zap.String("dir", p.Dir()), zap.Int("segments", n))
			}
		}
	}
}

// Close shuts down gracefully: stop accepting, finish in-flight requests,
// then flush and close every log.
func (b *Broker) Close(ctx context.Context) error {
	var err error
	b.stopOnce.Do(func() {
		close(b.stop)
		b.server.Shutdown(ctx)
		if b.httpSrv != nil {
			b.httpSrv.Shutdown(ctx)
		} else if b.httpLn != nil {
			b.httpLn.Close()
		}
		b.bg.Wait()
		if b.mirrors != nil {
			b.mirrors.Close()
		}
		err = b.closeFiles()
		b.logger.Info("stopped")
	})
	return err
}

// closeFiles closes the coordinators' logs, then flushes and closes every
// partition, num.recovery.threads.per.data.dir at a time (Kafka's
// LogManager.shutdown): each close is a few fsyncs of its own files, so
// with 1,000 partitions closing them one by one takes seconds.
// Every partition is closed whatever the others' errors; all are returned.
func (b *Broker) closeFiles() error {
	var errs []error
	if b.txns != nil {
		errs = append(errs, b.txns.Close())
	}
	if b.groups != nil {
		errs = append(errs, b.groups.Close())
		b.groups = nil
	}
	b.adminMu.Lock() // a creation in progress has given up (b.stop)
	defer b.adminMu.Unlock()
	b.mu.Lock()
	parts := b.allPartitionsLocked()
	errs = append(errs, forEachBounded(b.recoveryThreads(), len(parts), func(i int) error {
		return parts[i].Close()
	})...)
	b.topics = map[string]*Topic{}
	b.topicsByID = map[[16]byte]*Topic{}
	b.mu.Unlock()
	b.unlockDataDir()
	return errors.Join(errs...)
}

// allPartitionsLocked lists every partition, by topic name then index;
// b.mu held.
func (b *Broker) allPartitionsLocked() []*partition.Partition {
	names := make([]string, 0, len(b.topics))
	n := 0
	for name, t := range b.topics {
		names = append(names, name)
		n += len(t.Partitions)
	}
	sort.Strings(names)
	out := make([]*partition.Partition, 0, n)
	for _, name := range names {
		out = append(out, b.topics[name].Partitions...)
	}
	return out
}

func (b *Broker) partitionCount() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	n := 0
	for _, t := range b.topics {
		n += len(t.Partitions)
	}
	return n
}

// meta.properties, as Kafka writes it (KRaft, version 1):
//
//	version=1
//	cluster.id=<22-char base64url uuid>
//	node.id=<n>
const metaFile = "meta.properties"

// loadMeta reads or creates meta.properties. A --cluster-id that contradicts
// the stored one is an error, never a silent overwrite.
func (b *Broker) loadMeta() error {
	path := filepath.Join(b.dataDir, metaFile)
	raw, err := vfs.ReadFile(b.fs, path)
	if errors.Is(err, os.ErrNotExist) {
		id := b.cfg.ClusterID
		if id == "" {
			id = newClusterID()
		}
		b.clusterID = id
		body := fmt.Sprintf("#\n#minibroker\nversion=1\ncluster.id=%s\nnode.id=%d\n", id, b.nodeID)
		return vfs.WriteFileAtomic(b.fs, b.dataDir, path, []byte(body))
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", metaFile, err)
	}
	props := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			props[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	// Kafka's MetaPropertiesVersion knows 0 (ZooKeeper) and 1 (KRaft); a
	// KRaft node needs 1. A missing version is 0, as Kafka reads it.
	if v := props["version"]; v != "1" && !b.knobs.skipValidation {
		if v == "" {
			v = "0 (none given)"
		}
		return fmt.Errorf("refusing to start: %s has version=%s; minibroker reads version 1 (Kafka KRaft's)", path, v)
	}
	stored := props["cluster.id"]
	if stored == "" {
		return fmt.Errorf("%s has no cluster.id", path)
	}
	if b.cfg.ClusterID != "" && b.cfg.ClusterID != stored {
		return fmt.Errorf("--cluster-id %q contradicts cluster.id %q stored in %s: refusing to start (use another data dir, or drop the flag)",
			b.cfg.ClusterID, stored, path)
	}
	if n, ok := props["node.id"]; ok && n != strconv.Itoa(int(b.nodeID)) {
		return fmt.Errorf("--node-id %d contradicts node.id %s stored in %s", b.nodeID, n, path)
	}
	b.clusterID = stored
	return nil
}

func newClusterID() string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// Kill stops the broker as a crash would: every connection is cut at once
// and every partition abandoned without a flush, snapshot or clean-shutdown
// marker. For in-process crash tests.
func (b *Broker) Kill() {
	b.stopOnce.Do(func() {
		close(b.stop)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		b.server.Shutdown(ctx)
		if b.httpSrv != nil {
			b.httpSrv.Close()
		} else if b.httpLn != nil {
			b.httpLn.Close()
		}
		b.bg.Wait()
		if b.mirrors != nil {
			b.mirrors.Close()
		}
		if b.txns != nil {
			b.txns.Close() // all it acknowledged is fsynced already
		}
		if b.groups != nil {
			b.groups.Kill()
			b.groups = nil
		}
		b.adminMu.Lock()
		defer b.adminMu.Unlock()
		b.mu.Lock()
		for _, t := range b.topics {
			for _, p := range t.Partitions {
				p.Abandon()
			}
		}
		b.topics = map[string]*Topic{}
		b.topicsByID = map[[16]byte]*Topic{}
		b.mu.Unlock()
		b.unlockDataDir()
		b.logger.Info("killed")
	})
}
