package broker

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/partition"
)

// The log cleaner's manager (Kafka's LogCleaner and LogCleanerManager):
// log.cleaner.threads goroutines, each with its share of
// log.cleaner.dedupe.buffer.size, take the filthiest compacted partition
// not being cleaned (the highest dirty ratio at or above its
// min.cleanable.dirty.ratio, or any past max.compaction.lag.ms), clean it,
// and sleep log.cleaner.backoff.ms when there is none. A topic config
// change wakes them at once. A partition whose pass fails is marked
// uncleanable and skipped until the broker restarts (Kafka's
// markPartitionUncleanable): retrying it every backoff would reread its
// dirty section forever and, as its dirty ratio only grows, starve every
// other compacted partition. The cleaning itself is
// partition.Clean → internal/log's Cleaner (docs/COMPACTION.md).

type cleanerManager struct {
	b        *Broker
	threads  int
	backoff  time.Duration
	throttle *mlog.Throttler
	wake     chan struct{}

	mu         sync.Mutex // guards the fields below
	inProgress map[*partition.Partition]bool
	// uncleanable: partitions whose pass failed, skipped until restart.
	uncleanable map[*partition.Partition]bool
	stats       cleanerStats
}

// cleanerStats are Kafka's LogCleaner metrics.
type cleanerStats struct {
	maxDirtyPercent   float64
	lastRecopyPercent float64
	maxCleanTime      time.Duration
	maxBufferUtil     float64
	lastRun           time.Time
	bytesRead         float64
	bytesWritten      float64
	passes            float64
	errors            float64
}

func newCleanerManager(b *Broker) *cleanerManager {
	rate, _ := strconv.ParseFloat(strings.TrimSpace(b.cfg.String("log.cleaner.io.max.bytes.per.second")), 64)
	if math.IsInf(rate, 1) || rate >= math.MaxFloat64 {
		rate = 0
	}
	return &cleanerManager{b: b, threads: int(b.cfg.Int64("log.cleaner.threads")),
		backoff:  time.Duration(b.cfg.Int64("log.cleaner.backoff.ms")) * time.Millisecond,
		throttle: mlog.NewThrottler(rate), wake: make(chan struct{}, 1),
		inProgress: map[*partition.Partition]bool{}, uncleanable: map[*partition.Partition]bool{}}
}

// start runs the cleaner threads until b.stop closes.
func (m *cleanerManager) start() {
	if !m.b.cfg.Bool("log.cleaner.enable") || m.threads <= 0 {
		return
	}
	per := m.b.cfg.Int64("log.cleaner.dedupe.buffer.size") / int64(m.threads)
	load, _ := strconv.ParseFloat(strings.TrimSpace(m.b.cfg.String("log.cleaner.io.buffer.load.factor")), 64)
	for range m.threads {
		c := mlog.NewCleaner(min(per, math.MaxInt32), load, m.throttle)
		m.b.bg.Add(1)
		go func() {
			defer m.b.bg.Done()
			m.run(c)
		}()
	}
}

// poke wakes the cleaner threads (a topic config changed).
func (m *cleanerManager) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *cleanerManager) run(c *mlog.Cleaner) {
	for {
		cleaned := false
		if p := m.grabFilthiest(); p != nil {
			cleaned = m.clean(c, p)
		}
		if cleaned {
			select {
			case <-m.b.stop:
				return
			default:
			}
			continue
		}
		t := time.NewTimer(m.backoff)
		select {
		case <-m.b.stop:
			t.Stop()
			return
		case <-m.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// grabFilthiest picks the compacted partition to clean and marks it in
// progress (Kafka's grabFilthiestCompactedLog).
func (m *cleanerManager) grabFilthiest() *partition.Partition {
	var best *partition.Partition
	bestRatio, maxDirty := -1.0, 0.0
	seen := map[*partition.Partition]bool{} // compacted partitions still served
	for _, name := range m.b.TopicNames() {
		t, ok := m.b.Topic(name)
		if !ok {
			continue
		}
		for _, p := range m.b.partitions(t) {
			if !p.Compacted() {
				continue
			}
			seen[p] = true
			m.mu.Lock()
			skip := m.uncleanable[p]
			m.mu.Unlock()
			if skip {
				continue
			}
			ca, err := p.Cleanable()
			if err != nil || ca.CleanableBytes == 0 {
				continue
			}
			maxDirty = max(maxDirty, ca.Ratio)
			ratio := ca.Ratio
			if ca.NeedNow {
				ratio = 2 // past max.compaction.lag.ms: first
			} else if ca.Ratio < p.MinCleanableRatio() {
				continue
			}
			m.mu.Lock()
			busy := m.inProgress[p]
			m.mu.Unlock()
			if !busy && ratio > bestRatio {
				best, bestRatio = p, ratio
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.maxDirtyPercent = 100 * maxDirty
	for p := range m.uncleanable {
		if !seen[p] {
			delete(m.uncleanable, p) // its topic was deleted
		}
	}
	if best != nil {
		if m.inProgress[best] {
			return nil
		}
		m.inProgress[best] = true
	}
	return best
}

func (m *cleanerManager) clean(c *mlog.Cleaner, p *partition.Partition) bool {
	st, err := p.Clean(c, false)
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.inProgress, p)
	m.stats.lastRun = time.Now()
	if err != nil {
		m.stats.errors++
		m.uncleanable[p] = true
		m.b.logger.Error("log cleaner: pass failed; the partition is uncleanable until the broker restarts",
			zap.String("dir", p.Dir()), zap.Error(err))
		return false
	}
	if !st.Cleaned {
		return false
	}
	m.stats.passes++
	m.stats.bytesRead += float64(st.BytesRead)
	m.stats.bytesWritten += float64(st.BytesWritten)
	if st.BytesRead > 0 {
		m.stats.lastRecopyPercent = 100 * float64(st.BytesWritten) / float64(st.BytesRead)
	}
	m.stats.maxCleanTime = max(m.stats.maxCleanTime, st.Elapsed)
	m.stats.maxBufferUtil = max(m.stats.maxBufferUtil, 100*st.BufferUtilization)
	return true
}

var (
	descCleanerMaxDirty   = prometheus.NewDesc("minibroker_log_cleaner_max_dirty_percent", "Kafka's max-dirty-percent: the highest dirty ratio of a compacted log at the last scan.", nil, nil)
	descCleanerRecopy     = prometheus.NewDesc("minibroker_log_cleaner_recopy_percent", "Kafka's cleaner-recopy-percent: bytes written as a share of bytes read by the last pass.", nil, nil)
	descCleanerMaxTime    = prometheus.NewDesc("minibroker_log_cleaner_max_clean_time_seconds", "Kafka's max-clean-time-secs: the longest pass.", nil, nil)
	descCleanerBufferUtil = prometheus.NewDesc("minibroker_log_cleaner_max_buffer_utilization_percent", "Kafka's max-buffer-utilization-percent: the fullest offset map of a pass.", nil, nil)
	descCleanerSinceLast  = prometheus.NewDesc("minibroker_log_cleaner_time_since_last_run_ms", "Kafka's time-since-last-run-ms (-1: never ran).", nil, nil)
	descCleanerRead       = prometheus.NewDesc("minibroker_log_cleaner_bytes_read_total", "Bytes of log the cleaner read and filtered.", nil, nil)
	descCleanerWritten    = prometheus.NewDesc("minibroker_log_cleaner_bytes_written_total", "Bytes the cleaner wrote into cleaned segments.", nil, nil)
	descCleanerPasses     = prometheus.NewDesc("minibroker_log_cleaner_passes_total", "Cleaning passes that rewrote segments.", nil, nil)
	descCleanerErrors     = prometheus.NewDesc("minibroker_log_cleaner_errors_total", "Cleaning passes that failed.", nil, nil)
	descCleanerUnclean    = prometheus.NewDesc("minibroker_log_cleaner_uncleanable_partitions", "Kafka's uncleanable-partitions-count: partitions a failed pass left uncleanable until restart.", nil, nil)
)

type cleanerCollector struct{ m *cleanerManager }

func (c cleanerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCleanerMaxDirty, descCleanerRecopy, descCleanerMaxTime, descCleanerBufferUtil,
		descCleanerSinceLast, descCleanerRead, descCleanerWritten, descCleanerPasses, descCleanerErrors, descCleanerUnclean} {
		ch <- d
	}
}

func (c cleanerCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	s := c.m.stats
	unclean := len(c.m.uncleanable)
	c.m.mu.Unlock()
	since := -1.0
	if !s.lastRun.IsZero() {
		since = float64(time.Since(s.lastRun).Milliseconds())
	}
	g := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	k := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	g(descCleanerMaxDirty, s.maxDirtyPercent)
	g(descCleanerRecopy, s.lastRecopyPercent)
	g(descCleanerMaxTime, s.maxCleanTime.Seconds())
	g(descCleanerBufferUtil, s.maxBufferUtil)
	g(descCleanerSinceLast, since)
	k(descCleanerRead, s.bytesRead)
	k(descCleanerWritten, s.bytesWritten)
	k(descCleanerPasses, s.passes)
	k(descCleanerErrors, s.errors)
	g(descCleanerUnclean, float64(unclean))
}
