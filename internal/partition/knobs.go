package partition

// knobs are the package's test seams, one unexported struct in the manner
// of pebble's Options.private (carried in Options.private, copied to
// Partition.knobs by Open): set only by this package's negative-control
// tests; the zero value is what production runs.
type knobs struct {
	// cleanDropsBarriers lets the cleaner remove MIRROR_PID_RESET
	// barriers as it removes markers, ignoring barrierDiscardable.
	cleanDropsBarriers bool
	// noReindexAborted leaves out reindexAborted: a replay does not put
	// back the index entry of an aborted transaction a crash left out.
	noReindexAborted bool
}
