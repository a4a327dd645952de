package mirror

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	bytes        *prometheus.CounterVec
	barriers     *prometheus.CounterVec
	fetchErrors  *prometheus.CounterVec
	groupsSynced *prometheus.CounterVec
}

func newMetrics(m *Manager, reg prometheus.Registerer) *metrics {
	mt := &metrics{
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minibroker_mirror_bytes_total",
			Help: "Record bytes mirrored from the source."}, []string{"mirror", "topic"}),
		barriers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minibroker_mirror_barriers_written_total",
			Help: "MIRROR_PID_RESET barriers written at failover."}, []string{"mirror"}),
		fetchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minibroker_mirror_fetch_errors_total",
			Help: "Failed fetches from the source."}, []string{"mirror", "topic"}),
		groupsSynced: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minibroker_mirror_group_offsets_synced_total",
			Help: "Group offset syncs applied from the source."}, []string{"mirror"}),
	}
	if reg != nil {
		reg.MustRegister(mt.bytes, mt.barriers, mt.fetchErrors, mt.groupsSynced, &stateCollector{m: m})
	}
	return mt
}

// stateCollector reports each mirrored partition's state and lag at scrape
// time.
type stateCollector struct{ m *Manager }

var (
	descState = prometheus.NewDesc("minibroker_mirror_partition_state",
		"1 for the state the mirrored partition is in.", []string{"mirror", "topic", "partition", "state"}, nil)
	descLag = prometheus.NewDesc("minibroker_mirror_lag_records",
		"Source high watermark, as of the source's last answer, minus local log end (it cannot grow while the source is unreachable: see minibroker_mirror_lag_milliseconds).", []string{"mirror", "topic", "partition"}, nil)
	descLagMs = prometheus.NewDesc("minibroker_mirror_lag_milliseconds",
		"Time since the partition was last caught up with the source (0 when caught up).", []string{"mirror", "topic", "partition"}, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descState
	ch <- descLag
	ch <- descLagMs
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	for _, name := range c.m.Names() {
		st, err := c.m.Describe(name)
		if err != nil {
			continue
		}
		for _, p := range st.Partitions {
			idx := strconv.Itoa(int(p.Partition))
			ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, 1, name, p.Topic, idx, string(p.State))
			if p.LagRecords >= 0 { // -1: not known yet
				ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(p.LagRecords), name, p.Topic, idx)
			}
			ch <- prometheus.MustNewConstMetric(descLagMs, prometheus.GaugeValue, float64(p.LagMillis), name, p.Topic, idx)
		}
	}
}
