package fault

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector reports every fault in /metrics while it is set:
// minibroker_fault_active (1 while it can fire, 0 once a counted fault
// has expired) and minibroker_fault_fired_total, labelled with what the
// fault targets. A cleared fault's series go with it.
func (r *Registry) Collector() prometheus.Collector { return collector{r} }

type collector struct{ r *Registry }

var (
	faultLabels    = []string{"id", "kind", "api", "topic", "partition", "mirror", "error"}
	descFaultOn    = prometheus.NewDesc("minibroker_fault_active", "A fault set on this broker: 1 while it can fire.", faultLabels, nil)
	descFaultFired = prometheus.NewDesc("minibroker_fault_fired_total", "Requests a fault has acted on.", faultLabels, nil)
	descFaults     = prometheus.NewDesc("minibroker_faults_active", "Faults that can fire.", nil, nil)
)

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descFaultOn
	ch <- descFaultFired
	ch <- descFaults
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descFaults, prometheus.GaugeValue, float64(c.r.active.Load()))
	for _, st := range c.r.List() {
		api, part, code := "", "", ""
		switch {
		case st.Kind == Storage:
			api = "Produce"
		case !st.Kind.IsLink():
			api = APIName(st.APIKey)
		}
		if st.Partition != nil {
			part = strconv.Itoa(int(*st.Partition))
		}
		if st.ErrorCode != 0 {
			code = strconv.Itoa(int(st.ErrorCode))
		}
		labels := []string{st.ID, string(st.Kind), api, st.Topic, part, st.Mirror, code}
		on := 0.0
		if st.Active {
			on = 1
		}
		ch <- prometheus.MustNewConstMetric(descFaultOn, prometheus.GaugeValue, on, labels...)
		ch <- prometheus.MustNewConstMetric(descFaultFired, prometheus.CounterValue, float64(st.Fired), labels...)
	}
}
