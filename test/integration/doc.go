// Package integration holds minibroker's black-box tests: real brokers (in
// process through minibrokertest, or the built binary) over real TCP,
// driven by real clients (kgo/kmsg/kadm, sarama, kafka-go,
// confluent-kafka-go, kcat), with real TLS and real files.
//
// The tests live in one package per thing they prove: clients, admin,
// security, storage, compaction, groups, txn, share, mirror, hostile and
// tools (docs/ARCHITECTURE.md says what each holds). What more than one
// package uses lives in itest: StartBinary (the built binary, the one way
// to run it), StartBroker (an in-process broker with the seams no user
// can reach; tests that need none use minibrokertest.Start), the clients,
// raw connections, secured mirror sources, ACL and SASL brokers, and Main,
// every package's TestMain (it fails the run on a leaked goroutine). A
// helper only one package uses stays in that package. A package that
// imports internal/ says why in its package comment.
//
// Each rule below is proven by the tests named beside it; where a rule is
// a safety rule, a negative control runs the same scenario with the rule
// switched off (through broker options no user can reach) and shows the
// failure. docs/ARCHITECTURE.md lists the unit tests of the same rules.
// TestDocGoNamesExist fails if a test named here does not exist (in one of
// the packages under test/integration, or in the internal package named
// before it).
//
// # The mirroring barrier
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
//   - The failover mode (mirror.failover.mode): truncate-to-lso (the
//     default) cuts at the LSO; abort-open-transactions (KIP-1279) mirrors
//     read_uncommitted and writes one ABORT marker per open transaction
//     before the barrier, keeping the non-transactional records past the
//     LSO, which read_committed consumers read while never reading the
//     aborted ones: TestMirrorFailoverModes. A crash before every step in
//     both modes (between the markers and after them before the barrier
//     included) ends with one barrier, the markers once, and the local
//     records acknowledged after the failover kept over a second kill:
//     TestMirrorFailoverModesCrashAtEachStep. Negative control: without
//     the markers the barrier forgets the open transactions and
//     read_committed reads their records: TestMirrorAbortModeWithoutMarkers.
//     kill -9 of the built binary after the stop answered, in both modes
//     (16 partitions): one barrier and the markers once on disk
//     (dump-log), the mode's records read_committed, local writes kept
//     over another kill: TestMirrorBinaryKill9DuringFailoverModes. It
//     found an ABORT marker on disk without its transaction index entry
//     (the entry's write waited behind a flush when the kill came); a
//     restart's replay now puts it back (internal/partition,
//     TestAbortedTxnReindexedAfterCrash), with its negative control.
//     The plan predicts both modes side by side and the drill measures
//     the mirror's, on the same held-LSO scenario: truncate-to-lso loses
//     the canary records past the LSO as predicted, abort-open-transactions
//     loses none and aborts the 2 open transactions, as predicted:
//     TestDrillFailoverModesSideBySide.
//   - Topologies: TestMirrorFailback, TestMirrorChain, TestMirrorFanOut,
//     TestMirrorFanIn, TestMirrorFailoverFailbackCycles,
//     TestMirrorFromKfakeCluster.
//   - Every client consumes over the barrier and transaction markers:
//     TestCompatMatrix (row control-batches).
//   - dump-log decodes the barrier; verify-log finds a failover without
//     one: TestLogToolsCLI, TestVerifyLogFailoverWithBarrier,
//     TestVerifyLogSwallowedFailoverLeavesNoTrace.
//   - Group offsets synced from the source are clamped to the failover's
//     cut: TestMirrorFailoverClampsSyncedGroupOffsets (classic and KIP-848
//     members), TestMirrorCrashBeforeGroupClamp.
//   - Both kinds of consumer group are synced (classic, KIP-848), a group
//     active on the destination is skipped and logged, and a KIP-848
//     member resumes after failover: TestMirrorSyncsConsumerGroups.
//     Negative control: TestMirrorFailoverWithoutGroupClamp.
//   - KIP-1279's leader-epoch invariant: a mirrored partition's leader
//     epoch is never below the source's (also after a restart), and a
//     synced offset clamped to the local log end carries the local epoch,
//     so a consumer validating it (librdkafka's seek, kgo, a group member)
//     resumes at the barrier after failover: TestMirrorLeaderEpochInvariant.
//     Negative control: TestMirrorLeaderEpochInvariantOff (librdkafka
//     resets to the start).
//   - A mirrored topic is read-only to every client, failing fast:
//     TestMirroredTopicRefusesEveryClientFast.
//   - A mirror checks its source is the same cluster and topic:
//     TestMirrorCopiesTopicIdentity, TestMirrorSourceLogStartMovedPast,
//     TestMirrorCLICreateChecksSource. A source address now served by
//     another cluster, or a source topic deleted and created again (Fetch
//     by topic id, and by name with a Metadata check), sends the
//     partitions to FAILED, not retried, the local log unchanged:
//     TestMirrorSourceClusterIDChangedFails,
//     TestMirrorSourceTopicRecreatedFails,
//     TestMirrorTopicRecreatedFetchByName (negative control in each: with
//     the identity and topic-id checks off, the other cluster's or the new
//     topic's records are appended).
//   - A start that would cut records the source never had (a failback)
//     reports them and is refused without --allow-truncate (Go API, HTTP
//     409, dry run): TestMirrorFailbackGuard; a restart after a failover
//     that cuts only the barrier needs no permission:
//     TestMirrorRestartAfterFailoverNeedsNoPermission; a drill stops
//     before such a cut: TestDrillFailbackCutNeedsAllowTruncate. Negative
//     control: TestMirrorFailbackWithoutGuard.
//   - A mirror loop (A mirroring a topic from B that B mirrors from A) is
//     refused and A stays writable; after B's failover the same start is
//     a failback and is accepted: TestMirrorLoopRefused (negative control
//     in it: with the check off neither cluster takes writes).
//   - A restart after a failover walks back through leader epochs and
//     keeps the log both clusters share; offsets never go back for a
//     reader meanwhile: TestMirrorRestartAfterFailoverKeepsCommonLog.
//     Negative control: TestMirrorRestartWithoutEpochWalkBackCutsWholeLog.
//   - A transaction open on a partition that becomes mirrored (a
//     failback) cannot commit (TRANSACTION_ABORTABLE) and its abort
//     completes: TestTxnCommitRefusedWhenPartitionBecameMirrored.
//   - A partition FAILED for a retriable reason is retried with growing
//     backoff, up to its maximum, and the wait survives a restart:
//     TestMirrorRetriesFailedPartition, TestMirrorRetrySurvivesRestart;
//     source settings no longer accepted send it to FAILED, read-only,
//     until fixed: TestMirrorSourceRefusedFailsAndRecovers; a resume while
//     PREPARING cancels the pause: TestMirrorResumeWhilePreparing.
//   - `mirror stop` names its topics or says --all-topics, and --wait
//     reports a step that failed or is still held (through a test-only
//     stop-step hook): TestMirrorStopAllTopicsWait; `mirror describe`
//     explains lost records and a lag held by an open transaction:
//     TestMirrorCLIDescribeExplains; `mirror describe --failed` lists the
//     FAILED partitions with retries n/max and the error:
//     TestMirrorCLIDescribeFailed; `mirror list` prints the mirror, its
//     topics, the source's cluster id and bootstrap:
//     TestMirrorCLIFailover, TestMirrorCLICreateChecksSource.
//   - --topics patterns at start, stop, pause and resume, --exclude at
//     start, a plain name matching that topic alone:
//     TestMirrorCLITopicPatterns; a pattern never takes over a local
//     topic: TestMirrorTopicPatternsLeaveLocalTopics (negative control in
//     it: the rule off, the local records are cut).
//   - Mirror settings by KIP-1279 name, refused when unknown or bad:
//     TestMirrorSettingsCLI, TestStaticMirrorSettings. Topic filters pick
//     up topics created after the start and never an excluded one:
//     TestMirrorTopicFilters (negative control: the exclude list removed);
//     a local topic is never taken over: TestMirrorAutoCreationLeavesLocalTopics
//     (negative control in it); a source topic deleted makes its mirror
//     FAILED, read-only, for the operator to fail over (KIP-1279):
//     TestMirrorSourceTopicDeletedFails; with mirror.topic.deleted.policy=stop
//     it is failed over on its own: TestMirrorSourceTopicDeleted; configs follow the source minus the
//     excluded properties: TestMirrorConfigSync (negative control in it);
//     the same from a kfake source: TestMirrorTopicFiltersFromKfake; a
//     failover of the whole mirror ends its filters:
//     TestMirrorStopAllEndsTopicFilters. Group offsets are synced for the
//     included groups only, never over a group active locally:
//     TestMirrorSyncsGroupOffsets. The throttle bounds all a mirror's
//     partitions together and changes while it runs: TestMirrorThrottle
//     (negative control in it: the throttle off). A static mirror from
//     the config file is not restarted after its failover:
//     TestStaticMirrorFromConfig.
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
//   - A CreateTopics killed half way leaves no orphan partition directory
//     after the restart: TestBinaryKill9DuringCreateTopics; altered topic
//     configs are answered only once fsynced: TestBinaryAlteredConfigsSurviveKill9;
//     256 partitions closed and opened in parallel keep records and
//     producer state, after a clean restart and a crash:
//     TestRestartManyPartitionsParallel.
//
// # Kafka's producer and transaction rules
//
//   - Deduplication, epoch fencing and sequences through the broker:
//     TestProducerStateThroughTheBroker, TestIdleProducersExpire.
//   - A transactional produce is verified against its transaction:
//     TestTxnProduceVerification.
//   - Transactions v2 (KIP-890 part 2, docs/TRANSACTIONS.md):
//     transaction.version 2 finalized, kgo uses it by itself (no
//     AddPartitionsToTxn, an epoch bump per EndTxn v5) while a client of
//     the older protocol keeps working, and UpdateFeatures moves the level
//     durably: TestTxnTV2Kgo; TxnOffsetCommit v5 joins its group and
//     TRANSACTION_ABORTABLE where Kafka answers it:
//     TestTxnTV2OffsetCommitAndAbortable; AddPartitionsToTxn v4-v5
//     (verify-only and add, CLUSTER_ACTION):
//     TestAddPartitionsToTxnV5VerifyAndAdd; kill -9 of the binary during a
//     version 2 commit: TestBinaryKill9DuringTV2Commit; the epoch bump
//     fences a zombie's late commit and record, and with the bump removed
//     (negative control) the late commit is accepted: (internal/broker,
//     TestTV2EpochBumpFencesZombie); Kafka 4's EndTxn retry table:
//     (internal/coordinator, TestEndTxnV2RetryTable,
//     TestEndTxnV2EpochExhaustion).
//   - Records are validated as Kafka's LogValidator validates them:
//     TestProduceValidatesRecords, TestProduceBoundsTimestamps,
//     TestProduceRewritesMaxTimestamp, TestProduceCorruptCRCAndPipelining.
//   - A transaction past its timeout is aborted and its producer fenced:
//     TestTxnTimeoutAbort; an operator's abort (KIP-664) moves the LSO past
//     it and fences a stale coordinator epoch:
//     TestTxnAdminAbortWithWriteTxnMarkers.
//
// # Consumer groups
//
//   - Static members (group.instance.id) that close without LeaveGroup,
//     librdkafka and kgo, stay until their session times out, then are
//     removed and the group can be deleted:
//     TestGroupsStaticMembersExpireAfterSession (negative control:
//     static members exempted from session expiry, the test fails).
//   - Share groups (KIP-932, docs/SHARE_GROUPS.md): three kgo share
//     consumers on one partition get every record; an accepted record is
//     never delivered again, a released one comes back at delivery count
//     2, a rejected one never: TestShareGroupThreeConsumers. A consumer
//     that stops acknowledging loses its records to another when the
//     acquisition lock ends: TestShareGroupLockExpiry (negative control:
//     lock expiry off, they stay with it). The share partition state
//     machine (internal/share, TestLockExpiryReleases). An
//     acknowledgement answered survives a crash, and nothing acquired
//     but unacknowledged is lost: TestShareGroupCrashKeepsAcks (negative
//     control: with the state not written, the 40 acknowledged records
//     come back) and, with kill -9 of the binary under three kgo share
//     consumers, TestShareGroupBinaryKill9. read_committed delivers no
//     aborted record and nothing past the last stable offset:
//     TestShareGroupReadCommitted (control: read_uncommitted delivers the
//     aborted ones). The mirror syncs share groups' start offsets, a
//     group active on the destination skipped, and after a failover the
//     group resumes there: TestMirrorSyncsShareGroups (control: a group
//     not synced reads the acknowledged records again).
//   - KIP-848 consumer groups (ConsumerGroupHeartbeat, docs/CONSUMER_GROUPS.md):
//     kgo with ServerSideBalancer joins, consumes, commits and shares the
//     partitions with a second member: TestConsumerGroup848Kgo; Kafka's
//     answers (validation, FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID,
//     STALE_MEMBER_EPOCH on OffsetCommit/OffsetFetch, DeleteGroups,
//     DescribeGroups): TestConsumerGroup848Errors. A regex member is given
//     a matching topic created after it joined: TestConsumerGroup848RegexNewTopic. A partition goes to its
//     new owner only after its previous owner's heartbeat shows it
//     revoked (internal/coordinator, TestConsumerGroupRevokeBeforeAssign;
//     negative control: with assignment before revocation, a partition
//     has two holders); the group log replays them
//     (internal/coordinator, TestConsumerGroupReplay). The compat
//     matrix's group-848 row runs the group row's scenario with kgo
//     (ServerSideBalancer) and confluent-kafka-go (group.protocol=consumer):
//     TestCompatMatrix. A consumer group mid-rebalance is the same after a
//     crash: TestConsumerGroup848SurvivesCrash; kill -9 of the binary while
//     kgo members rebalance loses no acknowledged commit and a new member
//     resumes at the commits: TestConsumerGroup848BinaryKill9. The
//     rebalance ledger: 10 kgo members join and 5 leave under load, no
//     partition held by two members at once, no record lost, the time to a
//     stable assignment logged beside a classic group's
//     (internal/broker, TestConsumerGroupRebalanceLedger; negative control:
//     with assignment before revocation, partitions are held twice and
//     records read twice).
//   - Online migration between the protocols (group.consumer.migration.policy):
//     classic kgo members (cooperative-sticky, range) and kgo
//     ServerSideBalancer members in one group under load, the classic group
//     upgraded when the first consumer-protocol member joins and downgraded
//     when the last leaves, no partition held by two members, every record
//     read (internal/broker, TestConsumerGroupMixedProtocolsLedger; negative
//     control: with assignment before revocation, partitions are held
//     twice); a mixed group is the same after a crash, offsets kept, its
//     classic member's heartbeat accepted: TestConsumerGroupMixedSurvivesCrash;
//     with the policy disabled a ConsumerGroupHeartbeat to a classic group
//     is GROUP_ID_NOT_FOUND: TestConsumerGroupMigrationPolicy; the
//     coordinator's answers (internal/coordinator,
//     TestClassicMemberJoinsConsumerGroup, TestClassicGroupOnlineUpgrade,
//     TestConsumerGroupOnlineDowngrade).
//
// # Fetch, offsets and topics
//
//   - Record sets are sent from the segment files (sendfile) only once
//     this broker has verified their bytes: TestConsumeSentFromFiles.
//   - A fetch with nothing to return has an empty record set, never a
//     null one, at every version: TestFetchEmptyRecordsNotNull.
//   - After DeleteRecords an offset below the log start is
//     OFFSET_OUT_OF_RANGE to every client: TestOffsetOutOfRangeAfterDeleteRecords.
//   - Fetch sessions (KIP-227) as Kafka's FetchManager serves them: a
//     sessionless fetch (epoch -1, any session id) gets its records:
//     TestFetchSessionless; full and incremental fetches, forgotten
//     partitions, unchanged partitions left out, INVALID_FETCH_SESSION_EPOCH,
//     FETCH_SESSION_ID_NOT_FOUND and FETCH_SESSION_TOPIC_ID_ERROR at
//     versions naming topics and IDs: TestFetchSessionIncremental; kgo
//     consuming 1,000 partitions through a session sends a fraction of a
//     full fetch's request bytes (negative control in the same test: the
//     cache size 0); Kafka's eviction rules, the bound on cached
//     partitions (with its negative control), duplicate epochs and many
//     consumers at once under -race: (internal/broker,
//     TestFetchSessionEviction, TestFetchSessionPartitionBound,
//     TestFetchSessionDuplicateEpoch, TestFetchSessionsConcurrentConsumers),
//     TestFetchSessionsKgo1000Partitions.
//   - Deleting a topic deletes its committed offsets:
//     TestDeletedTopicTakesItsOffsets; with auto-creation off an unknown
//     topic is UNKNOWN_TOPIC_OR_PARTITION and none appears:
//     TestAutoCreateDisabled. Auto-creation from Metadata answers as KRaft
//     Kafka (UNKNOWN_TOPIC_OR_PARTITION first, the partitions next time)
//     and clients retry: TestAutoCreateAnswersAsKRaft. Names Kafka
//     reserves (__consumer_offsets, …) are never plain topics:
//     TestReservedTopicNames. __consumer_offsets and __transaction_state
//     exist from start-up as Kafka's internal topics (listed as internal,
//     read under READ ACLs, never written, deleted or grown by a client,
//     an older plain one adopted): TestInternalTopics,
//     TestInternalTopicsFetchACLs, TestInternalTopicAdopted. The group
//     coordinator's store of record is __consumer_offsets in Kafka's
//     schemas (commits, deletions, memberships, transactional offsets
//     with their markers), read by a kgo consumer with kmsg's types:
//     TestOffsetsTopicKgo, TestOffsetsTopicTxnOffsets; a data dir whose
//     group log an earlier version wrote is migrated into it, crash-safe
//     after every file operation (internal/broker,
//     TestOffsetsMigrationCrash, with its negative control
//     TestOffsetsMigrationCrashNegativeControl). dump-log
//     --offsets-decoder prints them as kafka-dump-log does:
//     TestDumpLogOffsetsDecoder. The transaction coordinator's store of
//     record is __transaction_state in Kafka's TransactionLogKey/Value
//     schemas, read by a kgo consumer with kmsg's types (an expired id a
//     tombstone): TestTxnStateTopicKgo; a data dir whose state is in the
//     old transaction-state.log has it moved there at the first start:
//     TestTxnStateFromOlderDataDir; dump-log --transaction-log-decoder
//     prints them as kafka-dump-log does: TestDumpLogTransactionLogDecoder;
//     the kill -9 matrix of the move, with
//     its negative control: (internal/coordinator, TestTxnUpgradeCrash,
//     TestTxnUpgradeCrashNegativeControl). The mirrors' state is in
//     __mirror_state (minibroker's record layout), read by a kgo consumer,
//     printed by dump-log --mirror-state-decoder, tombstoned by a delete:
//     TestMirrorStateTopic.
//
// # Bad input and limits
//
//   - Hostile bytes get a Kafka error or a closed connection, never a
//     panic or a hang: TestHostileInputAtTheSocket, TestHostileClientSuite,
//     TestApiVersionsUnsupportedVersion.
//   - Connection, fetch-size, slow-reader and file-descriptor limits:
//     TestBrokerConnectionsPerIP, TestFetchMaxBytesCapsTheResponse,
//     TestSlowReadersBinary, TestFileLimitBinary.
//   - Every advertised API version round-trips, its request naming a
//     topic, a group and a transactional id, with the authorizer off and
//     with SASL and the authorizer on (a super user, and a principal with
//     no ACL), and no handler panics: TestEveryAdvertisedVersionRoundTrips;
//     the same frames mutated (bytes flipped, lengths 0xff/0x00, cut,
//     lengthened) never make a handler panic nor a rule meet a request
//     it cannot read: TestMutatedFramesNoPanic. Both check /metrics
//     (minibroker_handler_panics_total, minibroker_authz_rule_unreadable_total,
//     minibroker_request_panics_total), and minibrokertest fails every
//     test whose broker recovered a handler panic (Broker.Defects).
//     Negative control: a DeleteTopics handler panicking on purpose
//     fails the sweep at each of its versions and shows in Defects
//     (internal/broker, TestNoPanicPropertyNegativeControl); on the
//     rules before they were typed, the authorizer-on sweep failed at
//     DeleteTopics v1–v5.
//   - A recovered panic leaves no lock or flag held: a panic in a
//     transactional append still lets EndTxn decide
//     (internal/broker, TestPanicInProduceLeavesEndTxnWorking); one in a
//     group commit's fsync lets later waiters commit, syncing again what
//     it had taken (internal/log, TestFlushPanicLeavesWaitersWorking).
//   - Storage failures fail safe: an ABORT whose .txnindex write fails
//     takes the partition offline for writes and read_committed still
//     filters the aborted records
//     (internal/broker, TestFailedTxnIndexWriteKeepsAbortFiltered); a
//     roll refused by a read-only partition directory is retried once it
//     is writable, every acknowledged record served
//     (internal/broker, TestRollRefusedByReadOnlyDirRetried).
//   - 1,000 connections stalled mid-TLS or mid-SASL handshake do not stop
//     other clients: TestHostileHandshakes.
//   - Bad settings are refused at start (the binary exits having bound
//     no port): TestBinaryRefusesBadSettings, TestListenersConfigErrors,
//     TestBinaryClusterIDMismatch, TestBrokerNoConnectionsNeedsOverrides.
//   - Every setting of Kafka's broker ConfigDef is accepted with Kafka's
//     checks, so a Kafka server.properties starts the binary (node.id,
//     log.dirs, log.retention.hours acted on; the rest logged as ignored):
//     TestKafkaServerPropertiesFile; so does the environment of Kafka's
//     compose example, by the official image's variable rules
//     (serve --kafka-env): TestKafkaImageEnvironment.
//   - Dynamic broker configs are changed at run time per broker and as the
//     cluster default, applied at once, described with their source,
//     kept across a restart; read-only ones refused with Kafka's code and
//     message: TestDynamicBrokerConfigs. Kafka 3.9's deprecated topic
//     configs are accepted, described and ignored:
//     TestDeprecatedTopicConfigs.
//
// # Security
//
//   - TLS and mutual TLS listeners, keystore reload: TestTLSListener,
//     TestMutualTLS, TestKeystoreReload, TestEncryptedKeystoreKey.
//   - A mirror's source connection with SASL/SSL, refused credentials
//     sending the partition to FAILED: TestMirrorSourceSASLSSL,
//     TestMirrorSourceSecurityRefused, TestMirrorSourceRotatedPasswordRecovers;
//     a minibroker source with SCRAM over TLS and mTLS keys in each PEM
//     form, with refused credentials, keys and CAs in them:
//     TestMirrorSourceMinibrokerSCRAM, TestMirrorSourceMTLSKeyForms; the
//     password shows in no output or log: TestMirrorSourceSecurityCLI.
//   - SASL: PLAIN and SCRAM-SHA-512 (stored salted and hashed), a wrong
//     password refused with Kafka's message and never logged:
//     TestSASLPlain, TestSASLSCRAMOverTLS, TestStorageAddScram; a request
//     before authenticating or an unknown mechanism closes the connection:
//     TestSASLBadInput; SaslHandshake v0's bare tokens, and garbage in
//     their place: TestSASLHandshakeV0BareTokens,
//     TestSASLHandshakeV0Hostile; the session lifetime (KIP-368): a client
//     re-authenticates, TestSASLReauthentication, or is disconnected at
//     its next request after it, TestSASLSessionExpiry.
//   - The admin HTTP API's mirror stop (a failover) needs the admin token
//     and refuses a cross-site form: TestAdminAPIDeniedStopLeavesMirroring
//     (negative control in it: without admin.token.file the wrong token
//     stops the mirror).
//   - ACLs (docs/SECURITY.md, "ACLs"): every API a client sends, as an allowed and a
//     denied principal, with kadm/kgo/sarama: TestAuthorizationPerAPI
//     (negative control: the authorizer off), TestAutoCreateNeedsCreate,
//     TestProduceFetchNeedWriteRead, TestACLAPIsRoundTrip (restart and
//     kill -9 keep them), TestSaramaACLs; without an authorizer the ACL
//     APIs answer SECURITY_DISABLED: TestACLAPIsWithoutAuthorizer; a
//     mirrored topic's reads follow its ACLs while the group sync acts as
//     the broker: TestACLsOnMirror; ACLs synced from the source, only the
//     selected principals' on mirrored topics: TestMirrorACLSync.
//     Deleting a topic under ACLs with the clients that send DeleteTopics
//     v1–v5 (a list of names, once read as structs, a panic and a closed
//     connection): TestKafkaPythonDeleteTopicsUnderACLs,
//     TestSaramaDeleteTopicsUnderACLs (DELETE allowed: deleted; denied:
//     TOPIC_AUTHORIZATION_FAILED, kept). The rules fail closed: a body a
//     rule cannot read is denied and counted (internal/broker,
//     TestAuthzRulesFailClosed, TestAuthzFieldRulesFailClosed). The
//     per-API rules against Kafka's, sent as raw
//     kmsg so no client step answers for the broker, each with its
//     authz_table.go rule switched off as the negative control, are unit
//     tests with real SASL brokers (internal/broker,
//     TestAuthorizationPerAPIRules, TestOffsetFetchAuthorization,
//     TestAuthorizedOperations).
//
// # Client quotas (docs/QUOTAS.md)
//
//   - AlterClientQuotas and DescribeClientQuotas through kadm as rpk and
//     kcl call them: every entity kind, Kafka's errors for bad entities,
//     keys and values, validate_only, removal, durability across a
//     restart: TestClientQuotasAdmin. Precedence, Kafka's eight levels, and
//     the file surviving a crash (negative control: no fsync) are unit
//     tests (internal/quota, TestPrecedence, TestStoreSurvivesCrash).
//   - Which quota a kgo producer meets follows Kafka's precedence, and the
//     throttles show in /metrics per sensor:
//     TestClientQuotaPrecedenceEnforced. KIP-219 end to end on a bare
//     connection (throttle_time_ms at once, the next request only after
//     it): TestClientQuotaMutesConnection. request_percentage:
//     TestClientQuotaRequestPercentage. Before CreateTopics v6 the
//     mutation quota throttles and does not refuse:
//     TestClientQuotaMutationPermissive.
//   - Enforced, each with enforcement off as its negative control, are
//     unit tests with kgo/kadm on real brokers (internal/broker,
//     TestProducerByteRateEnforced, TestConsumerByteRateEnforced,
//     TestControllerMutationRateEnforced,
//     TestConnectionCreationRateEnforced); the channel muted for the
//     throttle (KIP-219), negative control the mute off (internal/protocol,
//     TestThrottleMutesConnection).
//
// # Operations
//
//   - `minibroker healthcheck` fails on anything but a Kafka listener:
//     TestBinaryHealthcheck (negative controls in it); every metric the
//     dashboard and alerts query exists: TestDashboardMetricsExist
//     (negative control in it).
//
// # Admin APIs with one-node answers (docs/ONE_NODE_APIS.md)
//
//   - Kafka's one-node answers, each test seen failing before the API was
//     served (the client refused: "broker is too old"):
//     TestElectLeadersOneNode (kadm), TestPartitionReassignmentsKadm,
//     TestPartitionReassignmentsSarama, TestDescribeQuorumOneNode,
//     TestAlterReplicaLogDirsOneDir, TestDescribeTopicPartitionsCursor,
//     TestClientMetricsResources, TestTelemetryNoSubscriptions,
//     TestDelegationTokensWithoutSecretKey (CREATE_TOKENS check switched
//     off as negative control), TestUpdateFeaturesOneNode (ALTER on the
//     cluster switched off as negative control),
//     TestUnregisterBrokerAndRaftVotersOneNode (the same negative
//     control); kversion's guess finds
//     the Kafka 4 APIs
//     served: TestKversionGuessKafka4APIs; group
//     configs validated, stored and kept across a restart:
//     TestGroupConfigsDescribeAlterPersist. Their ACLs, with the rule
//     switched off as negative control, are a unit test
//     (internal/broker, TestAdminAPIsAuthorization).
//
// # Older clients (docs/PROTOCOL_VERSIONS.md)
//
//   - client.protocol.version=3.9 serves Kafka 3.9's ranges, advertised
//     from the same table: TestKafka39ApiVersions; the old versions'
//     semantics (Produce v0–v2, Fetch v0–v3, ListOffsets v0's offsets
//     array): TestKafka39OldProduceAndFetch, TestKafka39ListOffsetsV0,
//     TestKafka39SaramaOldVersion; by default the same requests close
//     the connection (negative controls in the first and last); every
//     version of both tables round-trips:
//     TestEveryAdvertisedVersionRoundTripsKafka39.
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
//
// # Log compaction (docs/COMPACTION.md)
//
//   - cleanup.policy=compact: after the cleaner ran, a consumer from
//     offset 0 (read_committed and read_uncommitted) reads exactly the
//     latest value of each live key at its original offset, no aborted
//     record, tombstones until delete.retention.ms and not after:
//     TestCompactionWithKgo.
//   - A compacted topic cleaned at its source and by the mirror's own
//     cleaner while it mirrors fails over and fails back (divergence by
//     leader epoch on cleaned logs), every key's latest value kept:
//     TestMirrorCompactedFailoverFailback.
//   - The barrier survives cleaning while anything it resets is kept, so
//     producer state rebuilt from a cleaned log equals the uncleaned
//     log's (internal/partition, TestCompactionProperty); negative
//     control: the barrier removed like a marker
//     (internal/partition, TestCompactionPropertyWithoutBarrierRule).
//   - A crash at any step of the cleaner's swap leaves each group old or
//     cleaned, nothing kept lost (internal/log, TestCompactionCrashMatrix);
//     negative control: the cleaned files unsynced
//     (internal/log, TestCompactionCrashMatrixWithoutSync).
//   - The built binary, killed with SIGKILL at random points of its
//     cleaning passes while a producer writes, restarts with every
//     acknowledged record at its offset, no offset twice, and cleans on
//     to exactly the latest record of each key:
//     TestBinaryKill9DuringCleaning.
//   - A cleaner swap excludes truncation, DeleteRecords and retention
//     (swapMu), so a crash never completes a durable swap over segments a
//     truncation cut (internal/log, TestCompactionSwapExcludesTruncation);
//     negative control: the swap without swapMu brings cut offsets back
//     (internal/log, TestCompactionSwapWithoutSwapMu).
//   - A chained mirror of a cleaned log holding a barrier (Z→A, A fails
//     over and cleans past delete.retention.ms, A→B→C, then B fails
//     over): the same bytes and producer state at every hop, A's barrier
//     kept, every key's latest value on C: TestMirrorChainOverCleanedLog.
//   - A consumer group committed at an offset the cleaner removed
//     resumes at the next kept record: TestCompactionGroupOffsetInGap.
//   - A partition whose cleaning fails is marked uncleanable until
//     restart, so other compacted topics are still cleaned and the pass
//     is not rerun every backoff: TestCompactionUncleanablePartition.
package integration
