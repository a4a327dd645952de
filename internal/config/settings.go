package config

import "math"

// settings is minibroker's one table of Kafka-named settings: every broker
// setting it accepts and every topic-level config, each with Kafka's type,
// default, range and allowed values (Kafka's ConfigDef definitions in
// KafkaConfig, SocketServerConfigs, ServerLogConfigs and LogConfig are the
// reference). Start-up (Config.Validate), --set, the config file,
// CreateTopics and AlterConfigs/IncrementalAlterConfigs all check values
// against it; DescribeConfigs describes it.
//
// Adding a setting is one line:
//
//	{Name: "a.broker.setting", Kind: KindInt, Default: "5", Min: 1, Doc: "…"},
//
// Name is the broker setting, Topic the topic-level config it is the
// default for (Kafka's log.retention.ms → retention.ms); a topic-only config
// has no Name. Integer kinds are checked against [Min, Max] (Min is always
// enforced, so a setting that takes negatives says so; Max 0 means the
// type's limit). OneOf lists the allowed values of a STRING (or each
// element of a LIST); Check adds any other rule.
//
// Where minibroker's rule differs from Kafka's, Doc or a comment says so.
var settings = []Setting{
	{Name: "num.partitions", Kind: KindInt, Default: "1", Min: 1, Doc: "Partitions of an auto-created topic or a CreateTopics with -1."},
	// Kafka: any INT. One node holds one replica, so nothing else is meaningful.
	{Name: "default.replication.factor", Kind: KindInt, Default: "1", Min: 1, Max: 1, Ignored: true, Doc: "Accepted for compatibility; one node keeps one replica."},
	{Name: "auto.create.topics.enable", Kind: KindBool, Default: "true", Doc: "Create a topic on Metadata or Produce for an unknown name."},
	{Name: "delete.topic.enable", Kind: KindBool, Default: "true", Doc: "Allow DeleteTopics."},
	// minibroker only: not a Kafka setting.
	// minibroker only: Kafka leaves the page cache to the kernel.
	{Name: "log.writeback.bytes", Kind: KindLong, Default: "8388608", Min: 0, Doc: "Write-behind window of a partition's active segment (minibroker only): each time this many bytes are appended, the background flusher starts the kernel's writeback of the whole pages just filled and waits for the window it started before, so about two windows are dirty at once rather than the whole segment, and the roll's fsync finds little left to write (docs/OPTIMISATIONS.md, Produce tail latency). 0: off, dirty pages are left to the kernel until an fsync. Durability is the fsync's either way."},
	{Name: "log.writeback.drop.behind.bytes", Kind: KindLong, Default: "-1", Min: -1, Doc: "Drop-behind of a partition's active segment (minibroker only): once the write-behind (log.writeback.bytes) has written a window back, the segment's pages more than this many bytes behind it are dropped from the page cache, so the next appends reuse that memory instead of taking pages the machine has not touched lately (on a virtual machine that returns free memory to its host, each such page is faulted in by the host: docs/OPTIMISATIONS.md, Produce path). About the partition's last this-many bytes stay cached (older segments, once fsynced, are dropped whole), more while a consumer up to 16 times this far behind keeps reading; a consumer further behind reads from the disk. 0: off, the kernel decides what stays cached (as for Kafka). -1 (the default): 67108864 (64 MiB) on a virtual machine whose virtio balloon reports free pages to its host (Firecracker, QEMU/KVM with free-page-reporting), else 0; the broker logs which at start. Needs log.writeback.bytes above 0."},
	{Name: "faults.enable", Kind: KindBool, Default: "false", Doc: "Fault injection for tests (minibroker only): the fault registry and its HTTP endpoints /v1/faults, which answer loopback clients only. Never reachable over the Kafka protocol."},
	// Kafka 4.0 (KIP-1030) raised the minimum to 1 MiB; minibroker keeps
	// the 3.x minimum (a v0 record's overhead) so tests can roll small segments.
	{Name: "log.segment.bytes", Topic: "segment.bytes", Kind: KindInt, Default: "1073741824", Min: 14, Doc: "Roll a segment at this size."},
	{Name: "log.roll.ms", Topic: "segment.ms", Kind: KindLong, Default: "604800000", Min: 1, Doc: "Roll a segment at this age."},
	{Name: "log.retention.ms", Topic: "retention.ms", Kind: KindLong, Default: "604800000", Min: -1, Doc: "Delete segments older than this (-1: forever)."},
	// Kafka: any LONG; a negative value is no limit.
	{Name: "log.retention.bytes", Topic: "retention.bytes", Kind: KindLong, Default: "-1", Min: math.MinInt64, Doc: "Delete old segments past this partition size (negative: no limit)."},
	{Name: "log.retention.check.interval.ms", Kind: KindLong, Default: "300000", Min: 1, Doc: "How often retention runs."},
	{Name: "log.index.interval.bytes", Topic: "index.interval.bytes", Kind: KindInt, Default: "4096", Min: 0, Doc: "Bytes between offset-index entries."},
	// Kafka: at least 4. minibroker's indexes need room for 4 entries (32 bytes).
	{Name: "log.index.size.max.bytes", Topic: "segment.index.bytes", Kind: KindInt, Default: "10485760", Min: 32, Doc: "Largest offset index per segment (at least 32 bytes; Kafka: 4)."},
	{Name: "log.flush.interval.messages", Topic: "flush.messages", Kind: KindLong, Default: maxLong, Min: 1, Doc: "fsync after this many messages; 1 = acknowledge acks=all only once fsynced."},
	// Kafka's default is unset (log.flush.scheduler.interval.ms, Long.MAX);
	// minibroker's -1 means the same: no time-based fsync.
	{Name: "log.flush.interval.ms", Topic: "flush.ms", Kind: KindLong, Default: "-1", Min: -1, Doc: "fsync at least this often (-1: left to the OS, as Kafka's default)."},
	{Name: "num.recovery.threads.per.data.dir", Kind: KindInt, Default: "2", Min: 1, Doc: "Partitions opened (recovering their logs) at start-up and flushed and closed at shutdown at once (Kafka 4.0's default, KIP-1030)."},
	{Name: "message.max.bytes", Topic: "max.message.bytes", Kind: KindInt, Default: "1048588", Min: 0, Doc: "Largest record batch a producer may send."},
	{Name: "log.message.timestamp.type", Topic: "message.timestamp.type", Kind: KindString, Default: "CreateTime", OneOf: []string{"CreateTime", "LogAppendTime"}, Doc: "CreateTime or LogAppendTime."},
	{Name: "log.message.timestamp.before.max.ms", Topic: "message.timestamp.before.max.ms", Kind: KindLong, Default: maxLong, Min: 0, Doc: "CreateTime topics: refuse records stamped more than this before the broker's clock (INVALID_TIMESTAMP)."},
	{Name: "log.message.timestamp.after.max.ms", Topic: "message.timestamp.after.max.ms", Kind: KindLong, Default: "3600000", Min: 0, Doc: "CreateTime topics: refuse records stamped more than this after the broker's clock (INVALID_TIMESTAMP; Kafka 4.0's default, KIP-1030)."},
	{Name: "socket.request.max.bytes", Kind: KindInt, Default: "104857600", Min: 1, Doc: "Largest request frame; larger closes the connection."},
	// Kafka: at least 0. minibroker: 0 would refuse every connection.
	{Name: "max.connections", Kind: KindInt, Default: "2147483647", Min: 1, Doc: "Open client connections at most; past it, a new connection waits, accepted but unread, until one closes (as Kafka)."},
	{Name: "max.connections.per.ip", Kind: KindInt, Default: "2147483647", Min: 0, Doc: "Open client connections per client IP at most (0: none, except the overrides', which must then be set); a connection over it is closed at once."},
	{Name: "max.connections.per.ip.overrides", Kind: KindString, Default: "", Check: checkConnectionOverrides, Doc: "Per-host or per-IP limits replacing max.connections.per.ip, as \"host:count,ip:count\"."},
	// Kafka: any LONG. A timer needs a positive one.
	{Name: "connections.max.idle.ms", Kind: KindLong, Default: "600000", Min: 1, Doc: "Close connections idle, half-open (part of a request, then silence) or not reading their responses this long."},
	{Name: "quota.window.num", Kind: KindInt, Default: "11", Min: 1, Doc: "Samples a client quota's rate is measured over (producer_byte_rate, consumer_byte_rate, request_percentage, connection_creation_rate)."},
	{Name: "quota.window.size.seconds", Kind: KindInt, Default: "1", Min: 1, Doc: "Width of each client quota sample."},
	{Name: "controller.quota.window.num", Kind: KindInt, Default: "11", Min: 1, Doc: "Samples of controller_mutation_rate (its token bucket holds quota × samples × width)."},
	{Name: "controller.quota.window.size.seconds", Kind: KindInt, Default: "1", Min: 1, Doc: "Width of each controller_mutation_rate sample."},
	{Name: "queued.max.requests", Kind: KindInt, Default: "500", Min: 1, Doc: "Decoded requests waiting to be processed, across connections."},
	{Name: "max.broker.partitions", Kind: KindInt, Default: "100000", Min: 1, Doc: "Partitions this broker may hold, besides its internal topics' (__consumer_offsets, __transaction_state); a CreateTopics or CreatePartitions past it is refused with POLICY_VIOLATION (KIP-578's name; Kafka has no such limit)."},
	{Name: "queued.max.request.bytes", Kind: KindLong, Default: "268435456", Min: -1, Doc: "Bytes of request frames read (in part or in full) and not yet handled, across connections; past it, no socket is read until memory is freed. At least 1.5 × socket.request.max.bytes + 2 MiB, or -1: unbounded (Kafka's default; minibroker bounds it by default)."},
	{Name: "max.incremental.fetch.session.cache.slots", Kind: KindInt, Default: "1000", Min: 0, Doc: "Incremental fetch sessions (KIP-227) the broker keeps at most; 0: none, every fetch is a full one. Kafka's eviction rules make room for new sessions (docs/FETCH_SESSIONS.md)."},
	{Name: "fetch.max.bytes", Kind: KindInt, Default: "57671680", Min: 1024, Doc: "Largest Fetch response; a request's MaxBytes above it is lowered to it."},
	{Name: "producer.id.expiration.ms", Kind: KindInt, Default: "86400000", Min: 1, Doc: "Forget an idle producer's state after this long."},
	{Name: "producer.id.expiration.check.interval.ms", Kind: KindInt, Default: "600000", Min: 1, Doc: "How often idle producers are expired."},
	{Name: "transactional.id.expiration.ms", Kind: KindInt, Default: "604800000", Min: 1, Doc: "Forget an idle transactional id after this long."},
	{Name: "transaction.max.timeout.ms", Kind: KindInt, Default: "900000", Min: 1, Doc: "Largest transaction.timeout.ms a producer may ask for."},
	// Kafka: any INT for these three; negatives mean nothing here.
	{Name: "group.min.session.timeout.ms", Kind: KindInt, Default: "6000", Min: 0, Doc: "Smallest consumer session timeout."},
	{Name: "group.max.session.timeout.ms", Kind: KindInt, Default: "1800000", Min: 0, Doc: "Largest consumer session timeout."},
	{Name: "group.initial.rebalance.delay.ms", Kind: KindInt, Default: "3000", Min: 0, Doc: "Wait for more members before the first rebalance of an empty group."},
	// Kafka names this offsets.retention.minutes (INT, at least 1).
	{Name: "offsets.retention.ms", Kind: KindLong, Default: "604800000", Min: 1, Doc: "Keep an empty group's committed offsets this long."},

	// Topic-level configs with no broker setting here, with LogConfig's
	// type and range. Accepted, described, kept; cleanup.policy and the
	// compaction settings are acted on (docs/COMPACTION.md), those marked
	// Ignored are not (one node, no compression rewrite, no tiered
	// storage).
	{Topic: "cleanup.policy", Kind: KindList, Default: "delete", OneOf: []string{"compact", "delete"}, Doc: "delete (retention), compact (the log cleaner, docs/COMPACTION.md), or both."},
	{Topic: "min.insync.replicas", Ignored: true, Kind: KindInt, Default: "1", Min: 1, Doc: "Accepted for compatibility; one node keeps one replica."},
	{Topic: "compression.type", Ignored: true, Kind: KindString, Default: "producer", OneOf: []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}, Doc: "Accepted; minibroker keeps the producer's compression."},
	{Topic: "unclean.leader.election.enable", Ignored: true, Kind: KindBool, Default: "false", Doc: "Accepted for compatibility."},
	{Topic: "message.downconversion.enable", Ignored: true, Kind: KindBool, Default: "true", Doc: "Accepted for compatibility."},
	{Topic: "preallocate", Kind: KindBool, Default: "false", Doc: "Reserve the active segment's disk blocks ahead of its writes (fallocate with the file's size kept, in steps as large as the segment so far, at most 64 MiB; Kafka sizes the whole segment file instead). Saves some broker CPU per MB, but the reservation runs on the append path and waits whenever the file system's journal is busy, so it is off by default, as in Kafka (docs/OPTIMISATIONS.md, Produce tail latency). Linux only."},
	{Topic: "min.compaction.lag.ms", Kind: KindLong, Default: "0", Min: 0, Doc: "Never clean segments whose newest record is younger than this."},
	{Topic: "max.compaction.lag.ms", Kind: KindLong, Default: maxLong, Min: 1, Doc: "Clean a log whose first dirty batch is older than this, whatever its dirty ratio."},
	{Topic: "delete.retention.ms", Kind: KindLong, Default: "86400000", Min: 0, Doc: "Keep tombstones, and the transaction markers and barriers the cleaner may remove, this long after their first cleaning."},
	{Topic: "file.delete.delay.ms", Ignored: true, Kind: KindLong, Default: "60000", Min: 0, Doc: "Accepted; minibroker deletes at once."},
	{Topic: "min.cleanable.dirty.ratio", Kind: KindDouble, Default: "0.5", Min: 0, Max: 1, Doc: "Clean a compacted log when its dirty bytes are at least this share of it."},

	// The log cleaner's broker settings (Kafka's CleanerConfig), acted on:
	// docs/COMPACTION.md.
	{Name: "log.cleaner.enable", Kind: KindBool, Default: "true", Min: noMin, Doc: "Run the log cleaner (compaction)."},
	{Name: "log.cleaner.threads", Kind: KindInt, Default: "1", Min: 0, Doc: "Cleaner threads; each cleans one log at a time."},
	{Name: "log.cleaner.dedupe.buffer.size", Kind: KindLong, Default: "134217728", Min: noMin, Doc: "Memory of the cleaners' offset maps (24 bytes a key), divided among the threads."},
	{Name: "log.cleaner.io.buffer.load.factor", Kind: KindDouble, Default: "0.9", Min: noMin, Doc: "How full an offset map is filled before a pass cleans what it covers."},
	{Name: "log.cleaner.io.max.bytes.per.second", Kind: KindDouble, Default: "1.7976931348623157E308", Min: noMin, Doc: "Bytes a second the cleaners read and write, all threads together."},
	{Name: "log.cleaner.backoff.ms", Kind: KindLong, Default: "15000", Min: 0, Doc: "A cleaner thread with nothing to clean sleeps this long."},
	{Topic: "message.timestamp.difference.max.ms", Ignored: true, Kind: KindLong, Default: maxLong, Min: 0, Doc: "Deprecated by Kafka 3.6 for the before/after pair; accepted, not acted on."},
	{Topic: "local.retention.ms", Ignored: true, Kind: KindLong, Default: "-2", Min: -2, Doc: "Tiered storage; accepted, not acted on."},
	{Topic: "local.retention.bytes", Ignored: true, Kind: KindLong, Default: "-2", Min: -2, Doc: "Tiered storage; accepted, not acted on."},
	// Kafka 3.9's other topic configs (LogConfig), accepted, described and
	// ignored as on one node they mean nothing.
	{Topic: "leader.replication.throttled.replicas", Ignored: true, Kind: KindList, Default: "", Check: checkThrottledReplicas, Doc: "Replication throttling: one node replicates nothing; accepted, not acted on."},
	{Topic: "follower.replication.throttled.replicas", Ignored: true, Kind: KindList, Default: "", Check: checkThrottledReplicas, Doc: "Replication throttling: one node replicates nothing; accepted, not acted on."},
	{Topic: "remote.log.copy.disable", Ignored: true, Kind: KindBool, Default: "false", Doc: "Tiered storage; accepted, not acted on."},
	{Topic: "remote.log.delete.on.disable", Ignored: true, Kind: KindBool, Default: "false", Doc: "Tiered storage; accepted, not acted on."},
	{Topic: "remote.storage.enable", Ignored: true, Kind: KindBool, Default: "false", Doc: "Tiered storage; accepted, not acted on."},
}

func init() {
	settings = append(settings, securitySettings...)
	for _, s := range securitySettings {
		if s.Listener {
			listenerScoped[s.Name] = true
		}
	}
	// Last of the package's init functions (file order): admin.go and
	// authorizer.go have added their rows.
	mergeKafkaSettings()
}
