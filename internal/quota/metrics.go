package quota

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// inactiveExpiry drops a sensor unused this long (Kafka's
// InactiveSensorExpirationTimeSeconds), so metrics do not grow with every
// client id ever seen.
const inactiveExpiry = time.Hour

var (
	descRate = prometheus.NewDesc("minibroker_client_quota_rate",
		"Measured rate per quota sensor over quota.window.num × quota.window.size.seconds: bytes/s (Produce, Fetch), percent of one thread (Request), partition mutations/s (ControllerMutation), connections/s (Connection). Labels are Kafka's metric tags: the user and client id the quota is shared by (empty: any).",
		[]string{"quota_type", "user", "client_id"}, nil)
	descLimit = prometheus.NewDesc("minibroker_client_quota_limit",
		"The quota that applies to the sensor (absent: none).",
		[]string{"quota_type", "user", "client_id"}, nil)
	descThrottleTime = prometheus.NewDesc("minibroker_client_quota_throttle_time_seconds_total",
		"Time responses of the sensor were throttled for (throttle_time_ms summed; the channel is muted that long).",
		[]string{"quota_type", "user", "client_id"}, nil)
	descThrottled = prometheus.NewDesc("minibroker_client_quota_throttled_total",
		"Responses (or connections, for Connection) throttled.",
		[]string{"quota_type", "user", "client_id"}, nil)
)

// Describe implements prometheus.Collector.
func (m *Manager) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRate
	ch <- descLimit
	ch <- descThrottleTime
	ch <- descThrottled
}

// Collect implements prometheus.Collector: one series of each per
// sensor, per ip for connection_creation_rate (the client_id label then
// holds the ip).
func (m *Manager) Collect(ch chan<- prometheus.Metric) {
	now := m.now()
	type row struct {
		typ, user, client string
		s                 *sensor
		w                 window
	}
	var rows []row
	m.mu.Lock()
	for k, s := range m.sensors {
		rows = append(rows, row{k.typ.String(), k.user, k.clientID, s, m.window(k.typ)})
	}
	for ip, s := range m.ips {
		rows = append(rows, row{"Connection", "", ip, s, m.window(Request)})
	}
	m.mu.Unlock()
	for _, r := range rows {
		r.s.mu.Lock()
		if now.Sub(r.s.used) > inactiveExpiry {
			r.s.mu.Unlock() // idle: not reported; sweepLocked drops it
			continue
		}
		rate := r.s.rate.measure(r.w, now)
		bound, count, total := r.s.bound, r.s.throttledCount, r.s.throttledTime
		r.s.mu.Unlock()
		labels := []string{r.typ, r.user, r.client}
		ch <- prometheus.MustNewConstMetric(descRate, prometheus.GaugeValue, rate, labels...)
		if !math.IsInf(bound, 1) && bound > 0 {
			ch <- prometheus.MustNewConstMetric(descLimit, prometheus.GaugeValue, bound, labels...)
		}
		ch <- prometheus.MustNewConstMetric(descThrottleTime, prometheus.CounterValue, total.Seconds(), labels...)
		ch <- prometheus.MustNewConstMetric(descThrottled, prometheus.CounterValue, float64(count), labels...)
	}
}
