package protocol

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the front end's Prometheus series.
type Metrics struct {
	Requests *prometheus.CounterVec
	// RequestBytes are the request frames' bytes, by API (Kafka's
	// RequestMetrics RequestBytes): over Requests, the mean request size.
	RequestBytes      *prometheus.CounterVec
	Latency           *prometheus.HistogramVec
	BytesIn, BytesOut prometheus.Counter
	// BytesSentFromFiles counts the part of BytesOut sent from segment
	// files with sendfile(2) (Request.AddFileRecords).
	BytesSentFromFiles       prometheus.Counter
	Connections              prometheus.Gauge
	ConnectionsTotal         prometheus.Counter
	ConnectionsRejected      prometheus.Counter
	ConnectionsThrottled     prometheus.Counter
	ConnectionsClosedOnError *prometheus.CounterVec
	Panics                   prometheus.Counter
	// HandlerPanics counts the panics recovered from a handler, by API
	// (also counted in Panics): each is a bug.
	HandlerPanics *prometheus.CounterVec
	// RequestQueue is Kafka's RequestQueueSize: requests decoded and
	// waiting to be processed, at most queued.max.requests.
	RequestQueue prometheus.Gauge
	// RequestMemory is the bytes of request frames read, in part or in
	// full, and not yet handled; RequestMemoryLimit is its bound,
	// queued.max.request.bytes (-1: unbounded).
	RequestMemory, RequestMemoryLimit prometheus.Gauge
	// security: the listeners' TLS and SASL series (secmetrics.go).
	security securityMetrics

	// byKey caches the labelled series of each API key, so a request does
	// not hash its label value (WithLabelValues) twice.
	byKey sync.Map // int16 → *apiSeries
}

type apiSeries struct {
	requests prometheus.Counter
	bytes    prometheus.Counter
	latency  prometheus.Observer
}

func (m *Metrics) forAPI(key int16) *apiSeries {
	if s, ok := m.byKey.Load(key); ok {
		return s.(*apiSeries)
	}
	name := apiName(key)
	s, _ := m.byKey.LoadOrStore(key, &apiSeries{requests: m.Requests.WithLabelValues(name), bytes: m.RequestBytes.WithLabelValues(name), latency: m.Latency.WithLabelValues(name)})
	return s.(*apiSeries)
}

// NewMetrics creates the series and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minibroker_requests_total", Help: "Requests handled, by API."}, []string{"api"}),
		RequestBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minibroker_request_bytes_total", Help: "Bytes of the request frames handled (size field included), by API."}, []string{"api"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "minibroker_request_duration_seconds", Help: "Time from a request's decode to its response, by API.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"api"}),
		BytesIn:  prometheus.NewCounter(prometheus.CounterOpts{Name: "minibroker_network_bytes_in_total", Help: "Request bytes read."}),
		BytesOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "minibroker_network_bytes_out_total", Help: "Response bytes written."}),
		BytesSentFromFiles: prometheus.NewCounter(prometheus.CounterOpts{Name: "minibroker_network_bytes_sent_from_files_total",
			Help: "Fetch record bytes sent from segment files with sendfile(2) (included in minibroker_network_bytes_out_total)."}),
		Connections:          prometheus.NewGauge(prometheus.GaugeOpts{Name: "minibroker_connections", Help: "Open client connections."}),
		ConnectionsTotal:     prometheus.NewCounter(prometheus.CounterOpts{Name: "minibroker_connections_accepted_total", Help: "Connections accepted."}),
		ConnectionsRejected:  prometheus.NewCounter(prometheus.CounterOpts{Name: "minibroker_connections_rejected_total", Help: "Connections closed at accept by max.connections.per.ip limits."}),
		ConnectionsThrottled: prometheus.NewCounter(prometheus.CounterOpts{Name: "minibroker_connections_throttled_total", Help: "Connections over their ip's connection_creation_rate quota: held unread for the throttle time, then closed."}),
		ConnectionsClosedOnError: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minibroker_connections_closed_on_error_total", Help: "Connections closed for a protocol violation or I/O error, by reason."}, []string{"reason"}),
		Panics: prometheus.NewCounter(prometheus.CounterOpts{Name: "minibroker_request_panics_total", Help: "Panics recovered while reading or handling a request."}),
		HandlerPanics: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minibroker_handler_panics_total",
			Help: "Panics recovered from a request's handler (the connection closed), by API: each is a bug."}, []string{"api"}),
		RequestQueue: prometheus.NewGauge(prometheus.GaugeOpts{Name: "minibroker_request_queue_size",
			Help: "Requests decoded and waiting to be processed (at most queued.max.requests)."}),
		RequestMemory: prometheus.NewGauge(prometheus.GaugeOpts{Name: "minibroker_request_memory_bytes",
			Help: "Bytes held by request frames read, in part or in full, and not yet handled (at most queued.max.request.bytes)."}),
		RequestMemoryLimit: prometheus.NewGauge(prometheus.GaugeOpts{Name: "minibroker_request_memory_limit_bytes",
			Help: "queued.max.request.bytes: the bound of minibroker_request_memory_bytes (-1: unbounded)."}),
	}
	m.security = newSecurityMetrics(reg)
	if reg != nil {
		reg.MustRegister(m.Requests, m.RequestBytes, m.Latency, m.BytesIn, m.BytesOut, m.BytesSentFromFiles, m.Connections, m.ConnectionsTotal,
			m.ConnectionsRejected, m.ConnectionsThrottled, m.ConnectionsClosedOnError, m.Panics, m.HandlerPanics, m.RequestQueue, m.RequestMemory, m.RequestMemoryLimit)
	}
	return m
}
