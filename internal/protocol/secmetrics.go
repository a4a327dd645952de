package protocol

import "github.com/prometheus/client_golang/prometheus"

// securityMetrics are the listeners' TLS and SASL series.
type securityMetrics struct {
	// AuthFailures counts failed SASL authentications (and set-ups that
	// timed out), by listener and mechanism: Kafka's
	// failed-authentication-total.
	AuthFailures *prometheus.CounterVec
	// AuthSuccesses counts SASL authentications and re-authentications.
	AuthSuccesses *prometheus.CounterVec
	// TLSHandshakeFailures counts TLS handshakes that failed or timed out.
	TLSHandshakeFailures *prometheus.CounterVec
	// SetupsInProgress is connections in their TLS handshake or SASL
	// authentication; SetupsRejected those closed at once because too
	// many were.
	SetupsInProgress prometheus.Gauge
	SetupsRejected   prometheus.Counter
}

func newSecurityMetrics(reg prometheus.Registerer) securityMetrics {
	m := securityMetrics{
		AuthFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minibroker_failed_authentication_total",
			Help: "Failed SASL authentications (wrong credentials, unsupported mechanism, timeout), by listener and mechanism."}, []string{"listener", "mechanism"}),
		AuthSuccesses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minibroker_successful_authentication_total",
			Help: "SASL authentications and re-authentications that succeeded, by listener and mechanism."}, []string{"listener", "mechanism"}),
		TLSHandshakeFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minibroker_tls_handshake_failures_total",
			Help: "TLS handshakes that failed or timed out, by listener."}, []string{"listener"}),
		SetupsInProgress: prometheus.NewGauge(prometheus.GaugeOpts{Name: "minibroker_connection_setups_in_progress",
			Help: "Connections in their TLS handshake or SASL authentication."}),
		SetupsRejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "minibroker_connection_setups_rejected_total",
			Help: "Connections closed at once because too many TLS handshakes or SASL authentications were in progress."}),
	}
	if reg != nil {
		reg.MustRegister(m.AuthFailures, m.AuthSuccesses, m.TLSHandshakeFailures, m.SetupsInProgress, m.SetupsRejected)
	}
	return m
}
