package mirror

// The plan's failover modes side by side: what a failover now would cut,
// abort and lose in each mode (mirror.failover.mode), so that an operator
// sees what the choice costs on the partitions as they are.
//
// Both are computed from one loss scan (lossscan.go: the local log from
// its LSO, then the source up to its high watermark):
//
//   - truncate-to-lso cuts the local log at its LSO: lost are the records
//     acknowledged at the source (not transactional, or their transaction
//     committed there) from the local LSO to the source's high watermark.
//   - abort-open-transactions cuts nothing and aborts the transactions
//     open in the local log. When the mirror runs in that mode (it fetches
//     read_uncommitted), lost are the records acknowledged at the source
//     past the local log end, and those of the transactions open locally
//     that the source committed: basis "now". When the mirror runs in
//     truncate-to-lso, it fetches read_committed and holds nothing past
//     the source's LSO, which the mode would have fetched: the prediction
//     is then for the log read_uncommitted would hold, up to the source's
//     high watermark (basis "source-high-watermark"): nothing acknowledged
//     is lost, and the transactions still open at the source are aborted.

// ModeLoss is a failover's cost in one mode.
type ModeLoss struct {
	Mode FailoverMode `json:"mode"`
	// Basis is "now" (the local log as it is) or "source-high-watermark"
	// (the log the mode's fetches would hold: see above).
	Basis string `json:"basis"`
	// Truncate is the offsets STOPPING would cut; AbortTransactions the
	// ABORT markers it would write.
	Truncate          int64 `json:"truncate"`
	AbortTransactions int   `json:"abort_transactions"`
	// LostRecords were acknowledged at the source and would never be read
	// here (-1: unknown, the source could not be read);
	// UncommittedRecords belong to transactions still open at the source
	// (no read_committed consumer has seen them; both modes lose them).
	LostRecords        int64 `json:"lost_records"`
	UncommittedRecords int64 `json:"uncommitted_records"`
	// RPOMillis is the age of the oldest lost record at the plan.
	RPOMillis int64 `json:"rpo_ms"`
}

// modeLosses is a partition's two modes; mode is the mirror's.
func modeLosses(now int64, mode FailoverMode, pp PartitionPlan, scan *lossScan) []ModeLoss {
	uncommitted, txns := scan.open()
	trunc := ModeLoss{Mode: FailoverTruncateToLSO, Basis: "now", Truncate: pp.LocalLogEndOffset - pp.LocalLastStable,
		LostRecords: scan.lost, UncommittedRecords: uncommitted}
	if scan.lost > 0 {
		trunc.RPOMillis = max(now-scan.oldestTS, 0)
	}
	abort := ModeLoss{Mode: FailoverAbortOpenTxns, Basis: "now", AbortTransactions: pp.OpenTransactions,
		LostRecords: scan.lostPastLocal, UncommittedRecords: uncommitted}
	if scan.lostPastLocal > 0 {
		abort.RPOMillis = max(now-scan.pastOldestTS, 0)
	}
	if mode != FailoverAbortOpenTxns {
		abort = ModeLoss{Mode: FailoverAbortOpenTxns, Basis: "source-high-watermark", AbortTransactions: txns,
			UncommittedRecords: uncommitted}
	}
	return []ModeLoss{trunc, abort}
}

// sumModes is the plan's modes: the partitions' summed (lost records of
// the partitions whose scan answered), the RPO their largest.
func sumModes(parts []PartitionPlan) []ModeLoss {
	out := []ModeLoss{{Mode: FailoverTruncateToLSO, Basis: "now"}, {Mode: FailoverAbortOpenTxns, Basis: "now"}}
	for _, pp := range parts {
		for i, ml := range pp.Modes {
			if i >= len(out) {
				break
			}
			o := &out[i]
			if ml.Basis != "now" {
				o.Basis = ml.Basis
			}
			o.Truncate += ml.Truncate
			o.AbortTransactions += ml.AbortTransactions
			o.LostRecords += max(ml.LostRecords, 0)
			o.UncommittedRecords += ml.UncommittedRecords
			o.RPOMillis = max(o.RPOMillis, ml.RPOMillis)
		}
	}
	return out
}
