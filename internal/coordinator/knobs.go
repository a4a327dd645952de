package coordinator

import "github.com/minibroker/minibroker/internal/recordlog"

// TestHooks switch the group coordinator's rules off, or stand in for a
// crash, for the tests of code outside this package (the broker's
// migration crash tests and consumer group ledgers): the same scenario
// with the rule removed shows the failure it prevents. The zero value is
// production. They live in the unexported knobs (GroupsOptions.private),
// set only through WithTestHooks.
type TestHooks struct {
	// MigrationStart, if set, is called when a migration of the group
	// log into __consumer_offsets starts (a test arms its crash there).
	MigrationStart func()
	// MigrationRemovesLogFirst makes the migration remove the group log
	// before the topic holds its state durably (offsets_topic_store.go).
	MigrationRemovesLogFirst bool
	// AssignBeforeRevoke gives a consumer group member its target
	// partitions at once, while their previous owner still holds them
	// (the reconciliation rule of consumer_group_core.go removed).
	AssignBeforeRevoke bool
}

// WithTestHooks returns o with the test hooks h in its unexported knobs.
// It is the one seam through which code outside this package (the
// broker's knobs) reaches them; production code never calls it, and no
// config file, flag or API leads to it. The other knobs are set by this
// package's own tests.
func WithTestHooks(o GroupsOptions, h TestHooks) GroupsOptions {
	o.private.hooks = h
	return o
}

// knobs are the package's test seams, one unexported struct in the manner
// of pebble's Options.private: carried in GroupsOptions.private (copied to
// the group core by OpenGroups) and TxnOptions.private; never set by a
// user; the zero value is what production runs.
type knobs struct {
	// hooks are the TestHooks above.
	hooks TestHooks

	// maxRecord lowers the group log's record bound (0: groupLogFormat's
	// 64 MiB), so a test can exceed it with a small request.
	maxRecord int
	// skipCoreBound: the core stores a group record of any length (its
	// check, checkGroupRecord, removed), so only the group log's writer
	// can refuse it.
	skipCoreBound bool
	// skipWriteBound: the log is written with a 1 GiB bound (read back,
	// the next open uses the real one). With skipCoreBound too, an
	// oversized record reaches the file: the negative control of the
	// record bound.
	skipWriteBound bool
	// sequentialSync: a write to several __consumer_offsets partitions
	// waits for their fsyncs one after the other (syncParts), the peer of
	// BenchmarkMultiPartitionSync.
	sequentialSync bool

	// afterProduceAddDurable is called by AddAndVerifyProduce once the
	// add's fsync has returned, before decideMu is taken again (a test
	// decides there).
	afterProduceAddDurable func()
	// afterOffsetsAddDurable is the same point in TxnOffsetCommitV2: the
	// group's add is durable, decideMu not yet taken again.
	afterOffsetsAddDurable func()
	// beforeOffsetsWait is called by TxnOffsetCommit(V2) once the offsets
	// are staged and decideMu released, before their fsync is waited for.
	beforeOffsetsWait func()
	// skipDecideGenCheck: AddAndVerifyProduce appends, and
	// TxnOffsetCommitV2 stages, even if a decision was made while they
	// waited for the add's fsync (the negative control of decideGen).
	skipDecideGenCheck bool
	// durableUnderDecideMu: AddAndVerifyProduce waits for the add's
	// fsync, and TxnOffsetCommit(V2) for the group add's and the staged
	// offsets' fsyncs, holding decideMu shared (the peer of
	// BenchmarkEndTxnWithProduces and BenchmarkEndTxnWithOffsetCommits,
	// and the negative control of TestEndTxnNotHeldByOffsetsFsync).
	durableUnderDecideMu bool

	// removeLegacyFirst makes the transaction state upgrade remove
	// transaction-state.log before the topic's records are written and
	// durable (txn_upgrade.go).
	removeLegacyFirst bool
}

// logFormat is the group log's format, with the test's record bound.
func (k knobs) logFormat() recordlog.Format {
	f := groupLogFormat
	if k.maxRecord > 0 {
		f.MaxRecord = k.maxRecord
	}
	return f
}
