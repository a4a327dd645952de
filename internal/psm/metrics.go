package psm

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Anomaly kinds counted for REPLICATION appends. Each is something a Kafka
// follower accepts (or, for nontxn_during_txn, fails on) and that a PID
// collision between two clusters produces.
const (
	AnomalyEpochRegression      = "epoch_regression"      // batch or marker with an epoch below the entry's
	AnomalySequenceGap          = "sequence_gap"          // same epoch, first sequence not last+1
	AnomalyNewEpochSequence     = "new_epoch_sequence"    // higher epoch of a known producer not starting at 0
	AnomalyCoordinatorEpoch     = "coordinator_epoch"     // marker with a coordinator epoch below the entry's
	AnomalyMarkerWithoutTxn     = "marker_without_txn"    // COMMIT/ABORT for a producer with no open transaction
	AnomalyNonTxnDuringTxn      = "nontxn_during_txn"     // non-transactional batch while the producer's transaction is open
	AnomalyMalformedControl     = "malformed_control"     // control batch that cannot be decoded
	AnomalyTransactionalBarrier = "transactional_barrier" // type 7 record in a transactional batch (ignored)
)

// Metrics are the PSM's Prometheus collectors, shared by every partition's
// Manager.
type Metrics struct {
	// ReplicationAnomalies is minibroker_psm_replication_anomalies_total{kind}.
	ReplicationAnomalies *prometheus.CounterVec
	// BarriersApplied counts MIRROR_PID_RESET batches applied (appends and
	// recovery replays).
	BarriersApplied prometheus.Counter
	// ClientRejections counts CLIENT/COORDINATOR appends refused, by error.
	ClientRejections *prometheus.CounterVec
	// Duplicates counts CLIENT batches answered as duplicates.
	Duplicates prometheus.Counter
	// ProducersExpired counts entries removed by producer.id.expiration.ms.
	ProducersExpired prometheus.Counter
	// CorruptSnapshots counts snapshot files skipped as corrupt.
	CorruptSnapshots prometheus.Counter
}

// NewMetrics creates the collectors and registers them with reg (nil: not
// registered). Registering twice with the same registry reuses the
// collectors already there.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ReplicationAnomalies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minibroker_psm_replication_anomalies_total",
			Help: "Producer-state anomalies in REPLICATION appends (mirrored data), by kind; a PID collision shows here.",
		}, []string{"kind"}),
		BarriersApplied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "minibroker_psm_barriers_applied_total",
			Help: "MIRROR_PID_RESET barriers that cleared producer state.",
		}),
		ClientRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minibroker_psm_rejections_total",
			Help: "Appends refused by producer-state validation, by reason.",
		}, []string{"reason"}),
		Duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "minibroker_psm_duplicates_total",
			Help: "Produce batches answered as duplicates of a retained batch.",
		}),
		ProducersExpired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "minibroker_psm_producers_expired_total",
			Help: "Producer entries removed after producer.id.expiration.ms.",
		}),
		CorruptSnapshots: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "minibroker_psm_corrupt_snapshots_total",
			Help: "Producer-state snapshot files skipped because they failed their checks.",
		}),
	}
	if reg != nil {
		m.ReplicationAnomalies = register(reg, m.ReplicationAnomalies)
		m.BarriersApplied = register(reg, m.BarriersApplied)
		m.ClientRejections = register(reg, m.ClientRejections)
		m.Duplicates = register(reg, m.Duplicates)
		m.ProducersExpired = register(reg, m.ProducersExpired)
		m.CorruptSnapshots = register(reg, m.CorruptSnapshots)
	}
	// Every kind is exported from the start, at 0: an alert on
	// increase(minibroker_psm_replication_anomalies_total[5m]) needs a
	// sample before the first anomaly, and a dashboard a series to show.
	for _, kind := range anomalyKinds {
		m.ReplicationAnomalies.WithLabelValues(kind)
	}
	return m
}

var anomalyKinds = []string{AnomalyEpochRegression, AnomalySequenceGap, AnomalyNewEpochSequence, AnomalyCoordinatorEpoch,
	AnomalyMarkerWithoutTxn, AnomalyNonTxnDuringTxn, AnomalyMalformedControl, AnomalyTransactionalBarrier}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err) // a programming error: conflicting metric definitions
	}
	return c
}

func rejectionReason(err error) string {
	switch {
	case errors.Is(err, ErrOutOfOrderSequence):
		return "out_of_order_sequence"
	case errors.Is(err, ErrInvalidProducerEpoch):
		return "invalid_producer_epoch"
	case errors.Is(err, ErrInvalidTxnState):
		return "invalid_txn_state"
	case errors.Is(err, ErrTransactionCoordinatorFenced):
		return "coordinator_fenced"
	case errors.Is(err, ErrControlBatchFromClient):
		return "control_from_client"
	case errors.Is(err, ErrMalformedControl):
		return "malformed_control"
	}
	return "other"
}
