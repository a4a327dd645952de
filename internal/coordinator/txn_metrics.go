package coordinator

import "github.com/prometheus/client_golang/prometheus"

// TxnMetrics are the transaction coordinator's series.
type TxnMetrics struct {
	ProducerIDsIssued prometheus.Counter
	TimedOut          prometheus.Counter
	Completed         *prometheus.CounterVec
}

var descTxnsByState = prometheus.NewDesc("minibroker_transactions",
	"Transactional ids by transaction state.", []string{"state"}, nil)

func newTxnMetrics(t *Transactions, reg prometheus.Registerer) *TxnMetrics {
	m := &TxnMetrics{
		ProducerIDsIssued: prometheus.NewCounter(prometheus.CounterOpts{Name: "minibroker_producer_ids_issued_total",
			Help: "Producer ids handed out (idempotent and transactional)."}),
		TimedOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "minibroker_transactions_timed_out_total",
			Help: "Transactions aborted by the coordinator because they exceeded transaction.timeout.ms."}),
		Completed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minibroker_transactions_completed_total",
			Help: "Transactions whose markers are all written, by result."}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.ProducerIDsIssued, m.TimedOut, m.Completed, txnStateCollector{t})
	}
	return m
}

// txnStateCollector counts transactional ids by state at scrape time.
type txnStateCollector struct{ t *Transactions }

func (c txnStateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descTxnsByState }

func (c txnStateCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[TxnState]int{}
	for _, md := range c.t.List() {
		counts[md.State]++
	}
	for _, s := range TxnStates() {
		if s == TxnDead {
			continue
		}
		ch <- prometheus.MustNewConstMetric(descTxnsByState, prometheus.GaugeValue, float64(counts[s]), s.String())
	}
}
