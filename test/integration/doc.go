// Package integration holds minibroker's black-box tests: real brokers (in
// process through minibrokertest, or the built binary) over real TCP,
// driven by real clients (kgo/kmsg/kadm, sarama, kafka-go,
// confluent-kafka-go, kcat), with real TLS and real files.
//
// A helper used by more than one file lives in a helpers file:
// helpers_test.go (clients, the built binary, raw connections, mirrored
// clusters and their test-only hooks), helpers_mirror_test.go (secured
// mirror sources, mirror admin calls and waits, mirrored transactions,
// topic filters), helpers_security_test.go (ACL and SASL brokers and
// clients), helpers_produce_test.go (raw producers, transactional
// clients) and helpers_compat_test.go (the compat matrix's shared rows
// and the client steps other tests reuse). Two exceptions: the compat
// matrix's own rows, cells and table stay in compat_matrix_test.go and
// its security rows in compat_security_test.go, and
// bench_helpers_test.go holds what only the benchmarks (*_bench_test.go)
// use.
//
// Each rule below is proven by the tests named beside it; where a rule is
// a safety rule, a negative control runs the same scenario with the rule
// switched off (through broker options no user can reach) and shows the
// failure. docs/ARCHITECTURE.md lists the unit tests of the same rules.
//
// # The mirroring barrier (the seed)
//
//   - Failover writes one MIRROR_PID_RESET per partition, after the
//     fetcher is gone and the log is cut to its local LSO, and producer
//     ids from the source never collide with local ones:
//     TestMirrorActivePassive, TestMirrorFailoverTruncatesToLocalLSO,
//     TestMirrorTransactionalCollision, TestMirrorCLIFailover.
//     Negative controls: TestMirrorActivePassiveWithoutBarrier,
//     TestMirrorChainWithoutBarrier, TestVerifyLogFailoverWithoutBarrier.
//   - The plan (dry run of stop) predicts what STOPPING cuts, the records
//     lost and still uncommitted and the RPO from batch timestamps, and
//     changes nothing: TestMirrorPlanPredictsStop; for a failback, what a
//     start's divergence truncation cuts: TestMirrorPlanFailbackDivergence.
//     With the source down it keeps the last seen offsets, reports the
//     error and leaves the lost records unknown: TestMirrorPlanSourceDown.
//     A drill measures what a failover lost, per partition, against what
//     its plan predicted: TestDrillActivePassive, TestDrillFailback,
//     TestDrillTransactional, TestDrillFanOut, TestDrillChain, and a
//     non-zero loss predicted exactly (an open transaction holding the
//     source's LSO at the failover): TestDrillPredictsLossPastHeldLSO;
//     against the docker compose demo clusters: TestDrillDockerCompose
//     (skipped without a Docker engine). Negative control: the
//     drill against a failover without the barrier reports the silent
//     loss and fails: TestDrillWithoutBarrierReportsSilentLoss.
//   - A crash anywhere in STOPPING resumes it without a second barrier:
//     TestMirrorCrashAtEachStoppingStep; a crash while mirroring resumes
//     byte for byte: TestMirrorCrashWhileMirroring,
//     TestMirrorBinaryKill9WhileMirroring.
//   - Topologies: TestMirrorFailback, TestMirrorChain, TestMirrorFanOut,
//     TestMirrorFanIn, TestMirrorFailoverFailbackCycles,
//     TestMirrorFromKfakeCluster.
//   - Every client consumes over the barrier and transaction markers:
//     TestCompatMatrix (row control-batches).
//   - dump-log decodes the barrier; verify-log finds a failover without
//     one: TestLogToolsCLI, TestVerifyLogFailoverWithBarrier,
//     TestVerifyLogSwallowedFailoverLeavesNoTrace.
//   - Group offsets synced from the source are clamped to the failover's
//     cut: TestMirrorFailoverClampsSyncedGroupOffsets, TestMirrorCrashBeforeGroupClamp.
//     Negative control: TestMirrorFailoverWithoutGroupClamp.
//   - A mirrored topic is read-only to every client, failing fast:
//     TestMirroredTopicRefusesEveryClientFast.
//   - A mirror checks its source is the same cluster and topic:
//     TestMirrorCopiesTopicIdentity, TestMirrorSourceLogStartMovedPast,
//     TestMirrorCLICreateChecksSource.
//   - Mirror settings by KIP-1279 name, refused when unknown or bad:
//     TestMirrorSettingsCLI, TestStaticMirrorSettings. Topic filters pick
//     up topics created after the start and never an excluded one:
//     TestMirrorTopicFilters (negative control: the exclude list removed);
//     a local topic is never taken over: TestMirrorAutoCreationLeavesLocalTopics
//     (negative control in it); a source topic deleted stops its mirror:
//     TestMirrorSourceTopicDeleted; configs follow the source minus the
//     excluded properties: TestMirrorConfigSync (negative control in it).
//     kill -9 during auto-creation and config sync:
//     TestBinaryKill9DuringMirrorAutoCreation, TestBinaryKill9DuringMirrorConfigSync,
//     TestMirrorCrashAfterAutoCreatedTopic (negative control in it).
//
// # Durability
//
//   - An acknowledged record survives kill -9: TestBinaryKill9KeepsAcknowledgedRecords,
//     TestKgoIdempotentProduceConsumeRestart.
//   - Committed group offsets survive kill -9: TestGroupsBinaryKill9,
//     TestGroupsKgoMemberAcrossBrokerRestart.
//   - Transactions decided before a crash complete after it; producer
//     ids never repeat: TestTxnOpenAcrossCrash,
//     TestTxnCommitCompletesAfterCrashBeforeMarkers,
//     TestTxnExactlyOncePipelineAcrossCrash,
//     TestTxnProducerIDsNeverRepeatAcrossRestarts.
//
// # Kafka's producer and transaction rules
//
//   - Deduplication, epoch fencing and sequences through the broker:
//     TestProducerStateThroughTheBroker, TestIdleProducersExpire.
//   - A transactional produce is verified against its transaction:
//     TestTxnProduceVerification.
//   - Records are validated as Kafka's LogValidator validates them:
//     TestProduceValidatesRecords, TestProduceBoundsTimestamps,
//     TestProduceRewritesMaxTimestamp, TestProduceCorruptCRCAndPipelining.
//
// # Bad input and limits
//
//   - Hostile bytes get a Kafka error or a closed connection, never a
//     panic or a hang: TestHostileInputAtTheSocket, TestHostileClientSuite,
//     TestApiVersionsUnsupportedVersion.
//   - Connection, fetch-size, slow-reader and file-descriptor limits:
//     TestBrokerConnectionsPerIP, TestFetchMaxBytesCapsTheResponse,
//     TestSlowReadersBinary, TestFileLimitBinary.
//   - Every advertised API version round-trips: TestEveryAdvertisedVersionRoundTrips.
//
// # Security
//
//   - TLS and mutual TLS listeners, keystore reload: TestTLSListener,
//     TestMutualTLS, TestKeystoreReload, TestEncryptedKeystoreKey.
//   - A mirror's source connection with SASL/SSL, refused credentials
//     sending the partition to FAILED: TestMirrorSourceSASLSSL,
//     TestMirrorSourceSecurityRefused, TestMirrorSourceRotatedPasswordRecovers.
//   - ACLs (README "ACLs"): every API a client sends, as an allowed and a
//     denied principal, with kadm/kgo/sarama: TestAuthorizationPerAPI
//     (negative control: the authorizer off), TestAutoCreateNeedsCreate,
//     TestProduceFetchNeedWriteRead, TestACLAPIsRoundTrip (restart and
//     kill -9 keep them). The per-API rules against Kafka's, sent as raw
//     kmsg so no client step answers for the broker, each with its
//     authz_table.go rule switched off as the negative control, are unit
//     tests with real SASL brokers (internal/broker,
//     TestAuthorizationPerAPIRules, TestOffsetFetchAuthorization,
//     TestAuthorizedOperations).
//
// # Fault injection (docs/FAULTS.md)
//
//   - A client's own error handling meets the faults: kgo retries a
//     retriable error and gives up on a non-retriable one or past its
//     retries: TestFaultKgoRetriesRetriableError,
//     TestFaultKgoGivesUpOnNonRetriableError, TestFaultKgoRetryLimit;
//     dropped connections, latency, one partition's failing writes and
//     fetches: TestFaultDropConnection, TestFaultLatency,
//     TestFaultStorageOnePartition, TestFaultFetchOnePartition; a consumer
//     group answered NOT_COORDINATOR re-finds its coordinator and
//     rebalances: TestFaultGroupNotCoordinator.
//   - A mirror's link paused, throttled or cut, then resumed
//     byte-identical: TestFaultMirrorLinkPauseResumesByteIdentical,
//     TestFaultMirrorThrottle, TestFaultMirrorSourceUnreachable.
//   - Deterministic: TestFaultFiresOnTheNthMatchingRequest,
//     TestFaultSeedRepeats.
//   - Off unless faults.enable, no endpoint or series then, and no Kafka
//     request turns it on: TestFaultBinaryDisabledByDefault; the CLI,
//     /metrics and the log: TestFaultCLIBinary. The loopback gate's
//     negative control is a unit test (internal/broker,
//     TestFaultEndpointsLoopbackOnly).
package integration
