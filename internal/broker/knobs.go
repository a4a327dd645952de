package broker

import (
	"time"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/share"
)

// TestHooks are the broker's seams for tests outside this package (the
// integration tests, through test/integration/itest's BrokerOptions):
// each switches a rule off for a negative control, the same scenario with
// the rule removed showing the failure it prevents. The zero value is
// production. They live in the unexported knobs (knobs.hooks), set only
// through WithTestHooks.
type TestHooks struct {
	// Share are the share coordinator's hooks (share.TestHooks: lock
	// expiry, release on connection close, the state store).
	Share share.TestHooks
}

// WithTestHooks returns o with the test hooks h in its unexported knobs.
// It is the one seam through which code outside this package reaches the
// broker's knobs; production code never calls it, and no config file,
// flag or API leads to it. The mirrors' hooks travel in Options.Mirror
// (mirror.WithTestHooks).
func WithTestHooks(o Options, h TestHooks) Options {
	o.private.hooks = h
	return o
}

// knobs are the broker's test-only seams, one struct in the manner of
// pebble's Options.private (carried in Options.private, copied to
// Broker.knobs by New): unexported, so this package's tests set them
// (Options.private, or newBroker's seams function) and code outside it
// only the hooks, through WithTestHooks; the zero value is what
// production runs. Each switches a rule off for a negative control or
// shortens a bound a test cannot wait for; none is reachable from a config
// file, flag or API.
type knobs struct {
	// hooks are the TestHooks above; the share coordinator gets
	// hooks.Share (share.WithTestHooks).
	hooks TestHooks

	// legacyCreateUnderRegistryLock creates partitions and writes
	// topics.json holding b.mu (so Produce and Fetch wait on it): the
	// negative controls of TestCreateDoesNotStallProduce and
	// TestCreateManyTopicsDoesNotStallProduce. It keeps the old code path
	// because the rule is where the slow work runs, not a check that can
	// be skipped: no other switch makes creation stall Produce.
	legacyCreateUnderRegistryLock bool

	// skipValidation starts with settings the table refuses (New does not
	// call Config.Validate nor check meta.properties' version) and stores
	// altered topic configs unchecked;
	// skipApplyConfigs stores altered topic configs without applying them
	// to the running partitions.
	skipValidation   bool
	skipApplyConfigs bool
	// skipAdminBrowserChecks serves the admin API without its
	// cross-origin, content-type and header rules (httpauth.go).
	skipAdminBrowserChecks bool
	// skipCommitMarkerCheck makes CheckTxnMarker pass every partition, a
	// mirrored one included, so EndTxn decides such a commit (txn.go).
	skipCommitMarkerCheck bool
	// noTV2EpochBump serves EndTxn v5+ without its epoch bump (the
	// decision keeps the epoch, as transaction version 0 does): the
	// negative control of KIP-890's fencing (26_end_txn.go).
	noTV2EpochBump bool
	// skipAuthzRule, when it returns true for an API key, serves that
	// API without its authzTable rule (authz_table.go); the checks inside
	// handlers (Metadata, DescribeGroups, …) still apply.
	skipAuthzRule func(key int16) bool
	// fetchSessionEviction replaces the fetch session cache's minimum
	// eviction age (Kafka's constant 120 s), fetchSessionMaxPartitions
	// its bound on cached partitions (fetch_session.go); 0: the defaults.
	fetchSessionEviction      time.Duration
	fetchSessionMaxPartitions int
	// skipQuotaEnforcement stores client quotas and answers
	// DescribeClientQuotas but never throttles (quotas.go): the seam for
	// the negative controls of the quota enforcement tests.
	skipQuotaEnforcement bool
	// panicInHandler, when it returns true for an API key, makes that
	// API's handler panic (after authorization): the negative control of
	// the no-panic property (defects.go).
	panicInHandler func(key int16) bool
	// panicInProduce, when it returns true for a topic, makes
	// producePartition panic for it while the transaction check is held
	// (00_produce.go: TestPanicInProduceLeavesEndTxnWorking).
	panicInProduce func(topic string) bool
	// legacyGroupLog opens the group coordinator without
	// __consumer_offsets, on the group log, as the version before the
	// topic was its store did (offsets_migration_test.go); groupHooks
	// are the group coordinator's (coordinator.WithTestHooks): its
	// migration crash seams, and the negative control of the consumer
	// group ledgers (AssignBeforeRevoke).
	legacyGroupLog bool
	groupHooks     coordinator.TestHooks
	// shareMigration adjusts the migration of the share state files into
	// __share_group_state (share_state_topic.go): its start hook, and
	// removeFirst, the negative control of its crash test.
	shareMigration shareMigrationSeams
}
