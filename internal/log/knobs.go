package log

import "time"

// knobs are the package's test seams, one unexported struct in the manner
// of pebble's Options.private (carried in Options.private): set only by
// this package's negative-control tests; the zero value is what
// production runs (spanDrainTimeout's zero is the constant).
type knobs struct {
	// spanTruncateNoWait: TruncateTo cuts under spans still out, which
	// the wait keeps from sending cut or rewritten bytes.
	spanTruncateNoWait bool
	// spanSkipsVerification lets unverified batches into a span, which
	// is what the verification check keeps out.
	spanSkipsVerification bool
	// spanDrainTimeout replaces spanDrainTimeout (0: the constant).
	spanDrainTimeout time.Duration
	// spanSharesDescriptor gives spans the segment's own file instead
	// of a duplicate, which a segment closed under a span turns into a
	// failed (or, once the number is reused, wrong) send.
	spanSharesDescriptor bool
	// storageFailuresFatal takes the log offline on every storage
	// failure, retryable ones included (retry.go): the negative control
	// of the retry rule.
	storageFailuresFatal bool
	// cleanSkipSync leaves the cleaner's .cleaned files unsynced before
	// the swap (the negative control of its crash matrix).
	cleanSkipSync bool
	// cleanSkipSwapMu: a cleaner swap does not hold swapMu, so a
	// truncation can cut its group while its .swap files are durable
	// (the negative control of TestCompactionSwapExcludesTruncation).
	cleanSkipSwapMu bool
	// recoverKeepsGaps: an unclean open keeps a segment that starts past
	// its predecessor's end above the recovery point, i.e. serves a log
	// with a hole where a power loss took a rolled segment's tail (the
	// negative control of recovery's gap rule).
	recoverKeepsGaps bool
	// gapRollSkipsSync: a roll past the log end neither fsyncs the log
	// nor moves the recovery point, so recovery takes the gap for a lost
	// tail and drops durable data (the negative control of
	// syncForGapRollLocked).
	gapRollSkipsSync bool
	// dropStopsAtRoll: drop-behind does not reach back past the active
	// segment's start into the segment the roll closed, so every roll
	// takes DropBehindBytes of new pages (the negative control of
	// TestDropBehindAcrossRoll).
	dropStopsAtRoll bool
	// dropIgnoresReaders: reads hold nothing, so drop-behind drops the
	// pages a reader a little behind the end is about to read (the
	// negative control of TestDropBehindHeldByReader).
	dropIgnoresReaders bool
	// cleanStep is called at each step of a cleaner swap
	// (clean_swap.go): the crash matrix clones the file system there.
	cleanStep func(step string)
}
