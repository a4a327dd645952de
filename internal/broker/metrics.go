package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the broker's own series (the front end and PSM have theirs).
type Metrics struct {
	Partitions    prometheus.Gauge
	ProduceErrors *prometheus.CounterVec
	BytesInTopic  *prometheus.CounterVec
	BytesOutTopic *prometheus.CounterVec
	HTTPRejected  prometheus.Counter
	// AuthzUnreadable counts requests an authorization rule could not
	// read and so denied (fail closed), by API: a bug, never expected.
	AuthzUnreadable *prometheus.CounterVec
}

func newMetrics(b *Broker, reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Partitions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "minibroker_partitions", Help: "Partitions on this node."}),
		ProduceErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minibroker_produce_errors_total",
			Help: "Partition produce results with an error, by Kafka error name."}, []string{"error"}),
		BytesInTopic: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minibroker_topic_bytes_in_total",
			Help: "Record bytes appended by producers, by topic."}, []string{"topic"}),
		BytesOutTopic: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minibroker_topic_bytes_out_total",
			Help: "Record bytes returned by Fetch, by topic."}, []string{"topic"}),
		HTTPRejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "minibroker_http_connections_rejected_total",
			Help: "HTTP connections closed at accept because the HTTP connection cap was reached."}),
		AuthzUnreadable: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minibroker_authz_rule_unreadable_total",
			Help: "Requests denied because their authorization rule could not read them (fail closed; a bug), by API."}, []string{"api"}),
	}
	reg.MustRegister(m.Partitions, m.ProduceErrors, m.BytesInTopic, m.BytesOutTopic, m.HTTPRejected, m.AuthzUnreadable, &offsetsCollector{b: b}, &storageCollector{b: b})
	return m
}

// offsetsCollector reports each partition's offsets at scrape time.
type offsetsCollector struct{ b *Broker }

var (
	descLEO = prometheus.NewDesc("minibroker_partition_log_end_offset", "Log end offset.", []string{"topic", "partition"}, nil)
	descLSO = prometheus.NewDesc("minibroker_partition_log_start_offset", "Log start offset.", []string{"topic", "partition"}, nil)
	descHW  = prometheus.NewDesc("minibroker_partition_high_watermark", "High watermark.", []string{"topic", "partition"}, nil)
)

func (c *offsetsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLEO
	ch <- descLSO
	ch <- descHW
}

func (c *offsetsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, name := range c.b.TopicNames() {
		t, ok := c.b.Topic(name)
		if !ok {
			continue
		}
		for _, p := range c.b.partitions(t) {
			o := p.Offsets()
			idx := strconv.Itoa(int(p.Index))
			ch <- prometheus.MustNewConstMetric(descLEO, prometheus.GaugeValue, float64(o.LogEnd), name, idx)
			ch <- prometheus.MustNewConstMetric(descLSO, prometheus.GaugeValue, float64(o.LogStart), name, idx)
			ch <- prometheus.MustNewConstMetric(descHW, prometheus.GaugeValue, float64(o.HighWatermark), name, idx)
		}
	}
}
