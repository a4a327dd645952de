package broker

// Defects: what the broker survived but never should have met. A handler
// panic is recovered (the connection closed, the broker serving on) and
// an authorization rule that cannot read a request denies it; both are
// bugs, counted in /metrics (minibroker_handler_panics_total{api},
// minibroker_authz_rule_unreadable_total{api}). minibrokertest fails a
// test whose broker reports any, so "no handler panic" is a property
// every in-process test holds, and the API sweeps check /metrics.

import (
	"fmt"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Defects lists the broker's recovered handler panics and unreadable
// requests since it started, one line per API ("handler panics in
// DeleteTopics: 1"); none: nil.
func (b *Broker) Defects() []string {
	var out []string
	if b.frontMetrics != nil {
		for api, n := range counts(b.frontMetrics.HandlerPanics) {
			out = append(out, fmt.Sprintf("handler panics in %s: %v", api, n))
		}
	}
	if b.metrics != nil {
		for api, n := range counts(b.metrics.AuthzUnreadable) {
			out = append(out, fmt.Sprintf("requests an authorization rule could not read, %s: %v", api, n))
		}
	}
	sort.Strings(out)
	return out
}

// counts are the non-zero values of a counter labelled by one label.
func counts(vec *prometheus.CounterVec) map[string]float64 {
	ch := make(chan prometheus.Metric)
	go func() {
		vec.Collect(ch)
		close(ch)
	}()
	out := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil || d.GetCounter().GetValue() == 0 {
			continue
		}
		label := ""
		if len(d.GetLabel()) > 0 {
			label = d.GetLabel()[0].GetValue()
		}
		out[label] = d.GetCounter().GetValue()
	}
	return out
}
