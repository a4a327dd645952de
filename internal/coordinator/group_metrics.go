package coordinator

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// GroupMetrics are the group coordinator's metrics.
type GroupMetrics struct {
	Groups     *prometheus.GaugeVec // by state
	Members    prometheus.Gauge
	Rebalances prometheus.Counter
}

// NewGroupMetrics registers the group metrics on reg (reusing ones already
// registered, as after a restart on the same registry).
func NewGroupMetrics(reg prometheus.Registerer) *GroupMetrics {
	return &GroupMetrics{
		Groups: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "minibroker_groups", Help: "Consumer groups by state.",
		}, []string{"state"})),
		Members: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "minibroker_group_members", Help: "Members of all consumer groups.",
		})),
		Rebalances: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "minibroker_group_rebalances_total", Help: "Completed consumer group rebalances (new generations).",
		})),
	}
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

func (g *Groups) updateMetricsLocked() {
	m := g.opts.Metrics
	if m == nil {
		return
	}
	byState, members := g.core.groupCounts()
	for _, s := range GroupStates {
		m.Groups.WithLabelValues(s.String()).Set(float64(byState[s]))
	}
	m.Members.Set(float64(members))
	if n := g.core.rebalances; n > 0 {
		m.Rebalances.Add(float64(n))
		g.core.rebalances = 0
	}
}
