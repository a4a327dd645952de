package log

// The names of the files a partition directory holds (doc.go has their
// layouts), exported for internal/logtool, which lists and decodes them:
// the names are defined here only.
const (
	LogSuffix       = logSuffix
	IndexSuffix     = indexSuffix
	TimeIndexSuffix = timeIndexSuffix
	TxnIndexSuffix  = txnIndexSuffix

	EpochCheckpointName   = epochCheckpointName
	LogStartOffsetName    = logStartOffsetName
	RecoveryPointName     = recoveryPointName
	CleanShutdownName     = cleanShutdownName
	CleanerCheckpointName = cleanerCheckpointName
)
