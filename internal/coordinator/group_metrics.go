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
	// Fenced counts consumer-group members the coordinator removed on a
	// timer, by reason: session_timeout (no heartbeat for the session
	// timeout), rebalance_timeout (partitions not revoked in time),
	// join_timeout and sync_timeout (a classic member in a consumer group
	// that did not rejoin or sync). Their partitions go to other members
	// before the fenced member hears of it, as in Kafka.
	Fenced *prometheus.CounterVec
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
		Fenced: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minibroker_group_members_fenced_total", Help: "Consumer group members removed by the coordinator's timers, by reason.",
		}, []string{"reason"})),
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
	for reason, n := range g.core.fenced {
		m.Fenced.WithLabelValues(reason).Add(float64(n))
		delete(g.core.fenced, reason)
	}
}
