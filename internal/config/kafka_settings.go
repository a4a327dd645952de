package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// kafkaSettings is every setting of Kafka 4's broker ConfigDef
// (AbstractKafkaConfig.CONFIG_DEF: the ConfigDefs of the classes named in
// From, merged; Kafka 4 dropped ZkConfigs, so no zookeeper.* setting is
// here), with Kafka's type, default, range and allowed values, and the
// update mode Kafka's DynamicBrokerConfig gives it. The facts were read
// from Kafka's source (4.0 development tree); the table is minibroker's.
//
// A row whose Name the settings table (settings.go, security.go) already
// has is not added: minibroker's row, which it acts on, wins, taking the
// update mode from here. A row whose Topic names a topic-only row of that
// table gives it its broker name. Every other row is added as accepted,
// checked and ignored, except the few minibroker acts on (actedOn).
//
// A Kafka setting without a range validator has Min noMin; a setting with
// no default (Kafka's null) has Default "".
var kafkaSettings = []Setting{
	{Name: "remote.log.storage.system.enable", Kind: KindBool, Default: "false", Min: noMin, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.storage.manager.impl.prefix", Kind: KindString, Default: "rsm.config.", Min: noMin, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.metadata.manager.impl.prefix", Kind: KindString, Default: "rlmm.config.", Min: noMin, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.storage.manager.class.name", Kind: KindString, Default: "", Min: noMin, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.storage.manager.class.path", Kind: KindString, Default: "", Min: noMin, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.metadata.manager.class.name", Kind: KindString, Default: "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager", Min: noMin, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.metadata.manager.class.path", Kind: KindString, Default: "", Min: noMin, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.metadata.manager.listener.name", Kind: KindString, Default: "", Min: noMin, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.metadata.custom.metadata.max.bytes", Kind: KindInt, Default: "128", Min: 0, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.index.file.cache.total.size.bytes", Kind: KindLong, Default: "1073741824", Min: 1, Dynamic: DynamicClusterWide, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.manager.thread.pool.size", Kind: KindInt, Default: "10", Min: 1, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.manager.copier.thread.pool.size", Kind: KindInt, Default: "-1", Min: -1, Check: checkPoolSize, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.manager.expiration.thread.pool.size", Kind: KindInt, Default: "-1", Min: -1, Check: checkPoolSize, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.manager.task.interval.ms", Kind: KindLong, Default: "30000", Min: 1, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.manager.task.retry.backoff.ms", Kind: KindLong, Default: "500", Min: 1, Internal: true, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.manager.task.retry.backoff.max.ms", Kind: KindLong, Default: "30000", Min: 1, Internal: true, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.manager.task.retry.jitter", Kind: KindDouble, Default: "0.2", Min: 0, Check: checkHalf, Internal: true, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.reader.threads", Kind: KindInt, Default: "10", Min: 1, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.reader.max.pending.tasks", Kind: KindInt, Default: "100", Min: 1, From: "RemoteLogManagerConfig"},
	{Name: "log.local.retention.ms", Topic: "local.retention.ms", Kind: KindLong, Default: "-2", Min: -2, Dynamic: DynamicClusterWide, From: "RemoteLogManagerConfig"},
	{Name: "log.local.retention.bytes", Topic: "local.retention.bytes", Kind: KindLong, Default: "-2", Min: -2, Dynamic: DynamicClusterWide, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.manager.copy.max.bytes.per.second", Kind: KindLong, Default: "9223372036854775807", Min: 1, Dynamic: DynamicClusterWide, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.manager.copy.quota.window.num", Kind: KindInt, Default: "11", Min: 1, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.manager.copy.quota.window.size.seconds", Kind: KindInt, Default: "1", Min: 1, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.manager.fetch.max.bytes.per.second", Kind: KindLong, Default: "9223372036854775807", Min: 1, Dynamic: DynamicClusterWide, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.manager.fetch.quota.window.num", Kind: KindInt, Default: "11", Min: 1, From: "RemoteLogManagerConfig"},
	{Name: "remote.log.manager.fetch.quota.window.size.seconds", Kind: KindInt, Default: "1", Min: 1, From: "RemoteLogManagerConfig"},
	{Name: "remote.fetch.max.wait.ms", Kind: KindInt, Default: "500", Min: 1, Dynamic: DynamicClusterWide, From: "RemoteLogManagerConfig"},
	{Name: "remote.list.offsets.request.timeout.ms", Kind: KindLong, Default: "30000", Min: 1, Dynamic: DynamicClusterWide, From: "RemoteLogManagerConfig"},
	{Name: "broker.id.generation.enable", Kind: KindBool, Default: "true", Min: noMin, From: "ServerConfigs"},
	{Name: "reserved.broker.max.id", Kind: KindInt, Default: "1000", Min: 0, From: "ServerConfigs"},
	{Name: "broker.id", Kind: KindInt, Default: "-1", Min: noMin, From: "ServerConfigs"},
	{Name: "message.max.bytes", Topic: "max.message.bytes", Kind: KindInt, Default: "", Min: 0, Dynamic: DynamicClusterWide, From: "ServerConfigs"},
	{Name: "num.io.threads", Kind: KindInt, Default: "8", Min: 1, Dynamic: DynamicClusterWide, From: "ServerConfigs"},
	{Name: "num.replica.alter.log.dirs.threads", Kind: KindInt, Default: "", Min: noMin, From: "ServerConfigs"},
	{Name: "background.threads", Kind: KindInt, Default: "10", Min: 1, Dynamic: DynamicClusterWide, From: "ServerConfigs"},
	{Name: "request.timeout.ms", Kind: KindInt, Default: "30000", Min: noMin, From: "ServerConfigs"},
	{Name: "socket.connection.setup.timeout.ms", Kind: KindLong, Default: "10000", Min: noMin, From: "ServerConfigs"},
	{Name: "socket.connection.setup.timeout.max.ms", Kind: KindLong, Default: "30000", Min: noMin, From: "ServerConfigs"},
	{Name: "authorizer.class.name", Kind: KindString, Default: "", Min: noMin, From: "ServerConfigs"},
	{Name: "early.start.listeners", Kind: KindString, Default: "", Min: noMin, From: "ServerConfigs"},
	{Name: "broker.rack", Kind: KindString, Default: "", Min: noMin, From: "ServerConfigs"},
	{Name: "controlled.shutdown.max.retries", Kind: KindInt, Default: "3", Min: noMin, From: "ServerConfigs"},
	{Name: "controlled.shutdown.retry.backoff.ms", Kind: KindLong, Default: "5000", Min: noMin, From: "ServerConfigs"},
	{Name: "controlled.shutdown.enable", Kind: KindBool, Default: "true", Min: noMin, From: "ServerConfigs"},
	{Name: "delete.topic.enable", Kind: KindBool, Default: "true", Min: noMin, From: "ServerConfigs"},
	{Name: "compression.type", Topic: "compression.type", Kind: KindString, Default: "", Min: noMin, Dynamic: DynamicClusterWide, From: "ServerConfigs"},
	{Name: "compression.gzip.level", Topic: "compression.gzip.level", Kind: KindInt, Default: "-1", Min: -1, Max: 9, Check: checkGzipLevel, Dynamic: DynamicClusterWide, From: "ServerConfigs"},
	{Name: "compression.lz4.level", Topic: "compression.lz4.level", Kind: KindInt, Default: "9", Min: 1, Max: 17, Dynamic: DynamicClusterWide, From: "ServerConfigs"},
	{Name: "compression.zstd.level", Topic: "compression.zstd.level", Kind: KindInt, Default: "3", Min: -131072, Max: 22, Dynamic: DynamicClusterWide, From: "ServerConfigs"},
	{Name: "max.incremental.fetch.session.cache.slots", Kind: KindInt, Default: "1000", Min: 0, From: "ServerConfigs"},
	{Name: "fetch.max.bytes", Kind: KindInt, Default: "57671680", Min: 1024, From: "ServerConfigs"},
	{Name: "max.request.partition.size.limit", Kind: KindInt, Default: "2000", Min: 1, From: "ServerConfigs"},
	{Name: "unstable.api.versions.enable", Kind: KindBool, Default: "false", Min: noMin, Internal: true, From: "ServerConfigs"},
	{Name: "unstable.feature.versions.enable", Kind: KindBool, Default: "false", Min: noMin, Internal: true, From: "ServerConfigs"},
	{Name: "metadata.log.max.record.bytes.between.snapshots", Kind: KindLong, Default: "20971520", Min: 1, From: "KRaftConfigs"},
	{Name: "metadata.log.max.snapshot.interval.ms", Kind: KindLong, Default: "3600000", Min: 0, From: "KRaftConfigs"},
	{Name: "process.roles", Kind: KindList, Default: "", Min: noMin, OneOf: []string{"broker", "controller"}, From: "KRaftConfigs"},
	{Name: "node.id", Kind: KindInt, Default: "-1", Min: noMin, From: "KRaftConfigs"},
	{Name: "initial.broker.registration.timeout.ms", Kind: KindInt, Default: "60000", Min: noMin, From: "KRaftConfigs"},
	{Name: "broker.heartbeat.interval.ms", Kind: KindInt, Default: "2000", Min: noMin, From: "KRaftConfigs"},
	{Name: "broker.session.timeout.ms", Kind: KindInt, Default: "9000", Min: noMin, From: "KRaftConfigs"},
	{Name: "controller.listener.names", Kind: KindString, Default: "", Min: noMin, From: "KRaftConfigs"},
	{Name: "sasl.mechanism.controller.protocol", Kind: KindString, Default: "GSSAPI", Min: noMin, From: "KRaftConfigs"},
	{Name: "metadata.log.dir", Kind: KindString, Default: "", Min: noMin, From: "KRaftConfigs"},
	{Name: "metadata.log.segment.bytes", Kind: KindInt, Default: "1073741824", Min: 12, From: "KRaftConfigs"},
	{Name: "metadata.log.segment.min.bytes", Kind: KindInt, Default: "8388608", Min: 12, Internal: true, From: "KRaftConfigs"},
	{Name: "metadata.log.segment.ms", Kind: KindLong, Default: "604800000", Min: noMin, From: "KRaftConfigs"},
	{Name: "metadata.max.retention.bytes", Kind: KindLong, Default: "104857600", Min: noMin, From: "KRaftConfigs"},
	{Name: "metadata.max.retention.ms", Kind: KindLong, Default: "604800000", Min: noMin, From: "KRaftConfigs"},
	{Name: "metadata.max.idle.interval.ms", Kind: KindInt, Default: "500", Min: 0, From: "KRaftConfigs"},
	{Name: "server.max.startup.time.ms", Kind: KindLong, Default: "9223372036854775807", Min: 0, Internal: true, From: "KRaftConfigs"},
	{Name: "eligible.leader.replicas.enable", Kind: KindBool, Default: "false", Min: noMin, From: "KRaftConfigs"},
	{Name: "listeners", Kind: KindString, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "SocketServerConfigs"},
	{Name: "advertised.listeners", Kind: KindString, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "SocketServerConfigs"},
	{Name: "listener.security.protocol.map", Kind: KindString, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "SocketServerConfigs"},
	{Name: "control.plane.listener.name", Kind: KindString, Default: "", Min: noMin, From: "SocketServerConfigs"},
	{Name: "socket.send.buffer.bytes", Kind: KindInt, Default: "102400", Min: noMin, From: "SocketServerConfigs"},
	{Name: "socket.receive.buffer.bytes", Kind: KindInt, Default: "102400", Min: noMin, From: "SocketServerConfigs"},
	{Name: "socket.request.max.bytes", Kind: KindInt, Default: "104857600", Min: 1, From: "SocketServerConfigs"},
	{Name: "socket.listen.backlog.size", Kind: KindInt, Default: "50", Min: 1, From: "SocketServerConfigs"},
	{Name: "max.connections.per.ip", Kind: KindInt, Default: "2147483647", Min: 0, Dynamic: DynamicClusterWide, From: "SocketServerConfigs"},
	{Name: "max.connections.per.ip.overrides", Kind: KindString, Default: "", Min: noMin, Dynamic: DynamicClusterWide, From: "SocketServerConfigs"},
	{Name: "max.connections", Kind: KindInt, Default: "2147483647", Min: 0, Dynamic: DynamicClusterWide, From: "SocketServerConfigs"},
	{Name: "max.connection.creation.rate", Kind: KindInt, Default: "2147483647", Min: 0, Dynamic: DynamicClusterWide, From: "SocketServerConfigs"},
	{Name: "connections.max.idle.ms", Kind: KindLong, Default: "600000", Min: noMin, From: "SocketServerConfigs"},
	{Name: "connection.failed.authentication.delay.ms", Kind: KindInt, Default: "100", Min: 0, From: "SocketServerConfigs"},
	{Name: "queued.max.requests", Kind: KindInt, Default: "500", Min: 1, From: "SocketServerConfigs"},
	{Name: "queued.max.request.bytes", Kind: KindLong, Default: "-1", Min: noMin, From: "SocketServerConfigs"},
	{Name: "num.network.threads", Kind: KindInt, Default: "3", Min: 1, Dynamic: DynamicClusterWide, From: "SocketServerConfigs"},
	{Name: "controller.socket.timeout.ms", Kind: KindInt, Default: "30000", Min: noMin, From: "ReplicationConfigs"},
	{Name: "default.replication.factor", Kind: KindInt, Default: "1", Min: noMin, From: "ReplicationConfigs"},
	{Name: "replica.lag.time.max.ms", Kind: KindLong, Default: "30000", Min: noMin, From: "ReplicationConfigs"},
	{Name: "replica.socket.timeout.ms", Kind: KindInt, Default: "30000", Min: noMin, From: "ReplicationConfigs"},
	{Name: "replica.socket.receive.buffer.bytes", Kind: KindInt, Default: "65536", Min: noMin, From: "ReplicationConfigs"},
	{Name: "replica.fetch.max.bytes", Kind: KindInt, Default: "1048576", Min: 0, From: "ReplicationConfigs"},
	{Name: "replica.fetch.wait.max.ms", Kind: KindInt, Default: "500", Min: noMin, From: "ReplicationConfigs"},
	{Name: "replica.fetch.backoff.ms", Kind: KindInt, Default: "1000", Min: 0, From: "ReplicationConfigs"},
	{Name: "replica.fetch.min.bytes", Kind: KindInt, Default: "1", Min: noMin, From: "ReplicationConfigs"},
	{Name: "replica.fetch.response.max.bytes", Kind: KindInt, Default: "10485760", Min: 0, From: "ReplicationConfigs"},
	{Name: "num.replica.fetchers", Kind: KindInt, Default: "1", Min: noMin, Dynamic: DynamicClusterWide, From: "ReplicationConfigs"},
	{Name: "replica.high.watermark.checkpoint.interval.ms", Kind: KindLong, Default: "5000", Min: noMin, From: "ReplicationConfigs"},
	{Name: "fetch.purgatory.purge.interval.requests", Kind: KindInt, Default: "1000", Min: noMin, From: "ReplicationConfigs"},
	{Name: "producer.purgatory.purge.interval.requests", Kind: KindInt, Default: "1000", Min: noMin, From: "ReplicationConfigs"},
	{Name: "delete.records.purgatory.purge.interval.requests", Kind: KindInt, Default: "1", Min: noMin, From: "ReplicationConfigs"},
	{Name: "auto.leader.rebalance.enable", Kind: KindBool, Default: "true", Min: noMin, From: "ReplicationConfigs"},
	{Name: "leader.imbalance.per.broker.percentage", Kind: KindInt, Default: "10", Min: noMin, From: "ReplicationConfigs"},
	{Name: "leader.imbalance.check.interval.seconds", Kind: KindLong, Default: "300", Min: 1, From: "ReplicationConfigs"},
	{Name: "unclean.leader.election.interval.ms", Kind: KindLong, Default: "300000", Min: 1, Internal: true, From: "ReplicationConfigs"},
	{Name: "unclean.leader.election.enable", Topic: "unclean.leader.election.enable", Kind: KindBool, Default: "false", Min: noMin, Dynamic: DynamicClusterWide, From: "ReplicationConfigs"},
	{Name: "security.inter.broker.protocol", Kind: KindString, Default: "PLAINTEXT", Min: noMin, OneOf: []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}, From: "ReplicationConfigs"},
	{Name: "inter.broker.protocol.version", Kind: KindString, Default: "4.0-IV0", Min: noMin, Check: checkMetadataVersion, From: "ReplicationConfigs"},
	{Name: "inter.broker.listener.name", Kind: KindString, Default: "", Min: noMin, From: "ReplicationConfigs"},
	{Name: "replica.selector.class", Kind: KindString, Default: "", Min: noMin, From: "ReplicationConfigs"},
	{Name: "group.min.session.timeout.ms", Kind: KindInt, Default: "6000", Min: noMin, From: "GroupCoordinatorConfig"},
	{Name: "group.max.session.timeout.ms", Kind: KindInt, Default: "1800000", Min: noMin, From: "GroupCoordinatorConfig"},
	{Name: "group.initial.rebalance.delay.ms", Kind: KindInt, Default: "3000", Min: noMin, From: "GroupCoordinatorConfig"},
	{Name: "group.max.size", Kind: KindInt, Default: "2147483647", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.coordinator.rebalance.protocols", Kind: KindList, Default: "classic,consumer", Min: noMin, OneOf: []string{"consumer", "classic", "share"}, From: "GroupCoordinatorConfig"},
	{Name: "group.coordinator.threads", Kind: KindInt, Default: "1", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.coordinator.append.linger.ms", Kind: KindInt, Default: "10", Min: 0, From: "GroupCoordinatorConfig"},
	{Name: "group.coordinator.new.enable", Kind: KindBool, Default: "true", Min: noMin, Internal: true, From: "GroupCoordinatorConfig"},
	{Name: "offset.metadata.max.bytes", Kind: KindInt, Default: "4096", Min: noMin, From: "GroupCoordinatorConfig"},
	{Name: "offsets.load.buffer.size", Kind: KindInt, Default: "5242880", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "offsets.topic.replication.factor", Kind: KindShort, Default: "3", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "offsets.topic.num.partitions", Kind: KindInt, Default: "50", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "offsets.topic.segment.bytes", Kind: KindInt, Default: "104857600", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "offsets.topic.compression.codec", Kind: KindInt, Default: "0", Min: noMin, From: "GroupCoordinatorConfig"},
	{Name: "offsets.retention.minutes", Kind: KindInt, Default: "10080", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "offsets.retention.check.interval.ms", Kind: KindLong, Default: "600000", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "offsets.commit.timeout.ms", Kind: KindInt, Default: "5000", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.consumer.session.timeout.ms", Kind: KindInt, Default: "45000", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.consumer.min.session.timeout.ms", Kind: KindInt, Default: "45000", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.consumer.max.session.timeout.ms", Kind: KindInt, Default: "60000", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.consumer.heartbeat.interval.ms", Kind: KindInt, Default: "5000", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.consumer.min.heartbeat.interval.ms", Kind: KindInt, Default: "5000", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.consumer.max.heartbeat.interval.ms", Kind: KindInt, Default: "15000", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.consumer.max.size", Kind: KindInt, Default: "2147483647", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.consumer.assignors", Kind: KindList, Default: "org.apache.kafka.coordinator.group.assignor.UniformAssignor,org.apache.kafka.coordinator.group.assignor.RangeAssignor", Min: noMin, From: "GroupCoordinatorConfig"},
	{Name: "group.consumer.migration.policy", Kind: KindString, Default: "bidirectional", Min: noMin, Check: checkMigrationPolicy, Internal: true, From: "GroupCoordinatorConfig"},
	{Name: "group.share.session.timeout.ms", Kind: KindInt, Default: "45000", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.share.min.session.timeout.ms", Kind: KindInt, Default: "45000", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.share.max.session.timeout.ms", Kind: KindInt, Default: "60000", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.share.heartbeat.interval.ms", Kind: KindInt, Default: "5000", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.share.min.heartbeat.interval.ms", Kind: KindInt, Default: "5000", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.share.max.heartbeat.interval.ms", Kind: KindInt, Default: "15000", Min: 1, From: "GroupCoordinatorConfig"},
	{Name: "group.share.max.size", Kind: KindInt, Default: "200", Min: 10, Max: 1000, From: "GroupCoordinatorConfig"},
	{Name: "log.cleaner.threads", Kind: KindInt, Default: "1", Min: 0, Dynamic: DynamicClusterWide, From: "CleanerConfig"},
	{Name: "log.cleaner.io.max.bytes.per.second", Kind: KindDouble, Default: "1.7976931348623157E308", Min: noMin, Dynamic: DynamicClusterWide, From: "CleanerConfig"},
	{Name: "log.cleaner.dedupe.buffer.size", Kind: KindLong, Default: "134217728", Min: noMin, Dynamic: DynamicClusterWide, From: "CleanerConfig"},
	{Name: "log.cleaner.io.buffer.size", Kind: KindInt, Default: "524288", Min: 0, Dynamic: DynamicClusterWide, From: "CleanerConfig"},
	{Name: "log.cleaner.io.buffer.load.factor", Kind: KindDouble, Default: "0.9", Min: noMin, Dynamic: DynamicClusterWide, From: "CleanerConfig"},
	{Name: "log.cleaner.backoff.ms", Kind: KindLong, Default: "15000", Min: 0, Dynamic: DynamicClusterWide, From: "CleanerConfig"},
	{Name: "log.cleaner.min.cleanable.ratio", Topic: "min.cleanable.dirty.ratio", Kind: KindDouble, Default: "0.5", Min: 0, Max: 1, Dynamic: DynamicClusterWide, From: "CleanerConfig"},
	{Name: "log.cleaner.enable", Kind: KindBool, Default: "true", Min: noMin, From: "CleanerConfig"},
	{Name: "log.cleaner.delete.retention.ms", Topic: "delete.retention.ms", Kind: KindLong, Default: "86400000", Min: 0, Dynamic: DynamicClusterWide, From: "CleanerConfig"},
	{Name: "log.cleaner.min.compaction.lag.ms", Topic: "min.compaction.lag.ms", Kind: KindLong, Default: "0", Min: 0, Dynamic: DynamicClusterWide, From: "CleanerConfig"},
	{Name: "log.cleaner.max.compaction.lag.ms", Topic: "max.compaction.lag.ms", Kind: KindLong, Default: "9223372036854775807", Min: 1, Dynamic: DynamicClusterWide, From: "CleanerConfig"},
	{Name: "num.partitions", Kind: KindInt, Default: "1", Min: 1, From: "LogConfig"},
	{Name: "log.dir", Kind: KindString, Default: "/tmp/kafka-logs", Min: noMin, From: "LogConfig"},
	{Name: "log.dirs", Kind: KindString, Default: "", Min: noMin, From: "LogConfig"},
	{Name: "log.segment.bytes", Topic: "segment.bytes", Kind: KindInt, Default: "1073741824", Min: 14, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.roll.ms", Topic: "segment.ms", Kind: KindLong, Default: "", Min: noMin, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.roll.hours", Kind: KindInt, Default: "168", Min: 1, From: "LogConfig"},
	{Name: "log.roll.jitter.ms", Topic: "segment.jitter.ms", Kind: KindLong, Default: "", Min: noMin, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.roll.jitter.hours", Kind: KindInt, Default: "0", Min: 0, From: "LogConfig"},
	{Name: "log.retention.ms", Topic: "retention.ms", Kind: KindLong, Default: "", Min: noMin, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.retention.minutes", Kind: KindInt, Default: "", Min: noMin, From: "LogConfig"},
	{Name: "log.retention.hours", Kind: KindInt, Default: "168", Min: noMin, From: "LogConfig"},
	{Name: "log.retention.bytes", Topic: "retention.bytes", Kind: KindLong, Default: "-1", Min: noMin, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.retention.check.interval.ms", Kind: KindLong, Default: "300000", Min: 1, From: "LogConfig"},
	{Name: "log.cleanup.policy", Topic: "cleanup.policy", Kind: KindList, Default: "delete", Min: noMin, OneOf: []string{"compact", "delete"}, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.index.size.max.bytes", Topic: "segment.index.bytes", Kind: KindInt, Default: "10485760", Min: 4, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.index.interval.bytes", Topic: "index.interval.bytes", Kind: KindInt, Default: "4096", Min: 0, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.flush.interval.messages", Topic: "flush.messages", Kind: KindLong, Default: "9223372036854775807", Min: 1, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.segment.delete.delay.ms", Topic: "file.delete.delay.ms", Kind: KindLong, Default: "60000", Min: 0, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.flush.scheduler.interval.ms", Kind: KindLong, Default: "9223372036854775807", Min: noMin, From: "LogConfig"},
	{Name: "log.flush.interval.ms", Topic: "flush.ms", Kind: KindLong, Default: "", Min: noMin, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.flush.offset.checkpoint.interval.ms", Kind: KindInt, Default: "60000", Min: 0, From: "LogConfig"},
	{Name: "log.flush.start.offset.checkpoint.interval.ms", Kind: KindInt, Default: "60000", Min: 0, From: "LogConfig"},
	{Name: "log.preallocate", Topic: "preallocate", Kind: KindBool, Default: "false", Min: noMin, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "num.recovery.threads.per.data.dir", Kind: KindInt, Default: "1", Min: 1, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "auto.create.topics.enable", Kind: KindBool, Default: "true", Min: noMin, From: "LogConfig"},
	{Name: "min.insync.replicas", Topic: "min.insync.replicas", Kind: KindInt, Default: "1", Min: 1, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.message.format.version", Topic: "message.format.version", Kind: KindString, Default: "3.0-IV1", Min: noMin, Check: checkMetadataVersion, From: "LogConfig"},
	{Name: "log.message.timestamp.type", Topic: "message.timestamp.type", Kind: KindString, Default: "CreateTime", Min: noMin, OneOf: []string{"CreateTime", "LogAppendTime"}, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.message.timestamp.difference.max.ms", Topic: "message.timestamp.difference.max.ms", Kind: KindLong, Default: "9223372036854775807", Min: 0, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.message.timestamp.before.max.ms", Topic: "message.timestamp.before.max.ms", Kind: KindLong, Default: "9223372036854775807", Min: 0, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.message.timestamp.after.max.ms", Topic: "message.timestamp.after.max.ms", Kind: KindLong, Default: "9223372036854775807", Min: 0, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "create.topic.policy.class.name", Kind: KindClass, Default: "", Min: noMin, From: "LogConfig"},
	{Name: "alter.config.policy.class.name", Kind: KindClass, Default: "", Min: noMin, From: "LogConfig"},
	{Name: "log.message.downconversion.enable", Topic: "message.downconversion.enable", Kind: KindBool, Default: "true", Min: noMin, Dynamic: DynamicClusterWide, From: "LogConfig"},
	{Name: "log.dir.failure.timeout.ms", Kind: KindLong, Default: "30000", Min: 1, From: "LogConfig"},
	{Name: "log.initial.task.delay.ms", Kind: KindLong, Default: "30000", Min: 0, Internal: true, From: "LogConfig"},
	{Name: "group.share.enable", Kind: KindBool, Default: "false", Min: noMin, Internal: true, From: "ShareGroupConfig"},
	{Name: "share.fetch.max.fetch.records", Kind: KindInt, Default: "2147483647", Min: noMin, Internal: true, From: "ShareGroupConfig"},
	{Name: "group.share.delivery.count.limit", Kind: KindInt, Default: "5", Min: 2, Max: 10, From: "ShareGroupConfig"},
	{Name: "group.share.record.lock.duration.ms", Kind: KindInt, Default: "30000", Min: 1000, Max: 3600000, From: "ShareGroupConfig"},
	{Name: "group.share.min.record.lock.duration.ms", Kind: KindInt, Default: "15000", Min: 1000, Max: 30000, From: "ShareGroupConfig"},
	{Name: "group.share.max.record.lock.duration.ms", Kind: KindInt, Default: "60000", Min: 30000, Max: 3600000, From: "ShareGroupConfig"},
	{Name: "group.share.max.groups", Kind: KindShort, Default: "10", Min: 1, Max: 100, From: "ShareGroupConfig"},
	{Name: "group.share.partition.max.record.locks", Kind: KindInt, Default: "2000", Min: 100, Max: 10000, From: "ShareGroupConfig"},
	{Name: "share.fetch.purgatory.purge.interval.requests", Kind: KindInt, Default: "1000", Min: noMin, From: "ShareGroupConfig"},
	{Name: "share.coordinator.state.topic.num.partitions", Kind: KindInt, Default: "50", Min: 1, From: "ShareCoordinatorConfig"},
	{Name: "share.coordinator.state.topic.replication.factor", Kind: KindShort, Default: "3", Min: 1, From: "ShareCoordinatorConfig"},
	{Name: "share.coordinator.state.topic.min.isr", Kind: KindShort, Default: "2", Min: 1, From: "ShareCoordinatorConfig"},
	{Name: "share.coordinator.state.topic.segment.bytes", Kind: KindInt, Default: "104857600", Min: 1, From: "ShareCoordinatorConfig"},
	{Name: "share.coordinator.threads", Kind: KindInt, Default: "1", Min: 1, From: "ShareCoordinatorConfig"},
	{Name: "share.coordinator.snapshot.update.records.per.snapshot", Kind: KindInt, Default: "500", Min: 0, From: "ShareCoordinatorConfig"},
	{Name: "share.coordinator.load.buffer.size", Kind: KindInt, Default: "5242880", Min: 1, From: "ShareCoordinatorConfig"},
	{Name: "share.coordinator.state.topic.compression.codec", Kind: KindInt, Default: "0", Min: noMin, From: "ShareCoordinatorConfig"},
	{Name: "share.coordinator.append.linger.ms", Kind: KindInt, Default: "10", Min: 0, From: "ShareCoordinatorConfig"},
	{Name: "share.coordinator.write.timeout.ms", Kind: KindInt, Default: "5000", Min: 1, From: "ShareCoordinatorConfig"},
	{Name: "transaction.state.log.min.isr", Kind: KindInt, Default: "2", Min: 1, From: "TransactionLogConfig"},
	{Name: "transaction.state.log.load.buffer.size", Kind: KindInt, Default: "5242880", Min: 1, From: "TransactionLogConfig"},
	{Name: "transaction.state.log.replication.factor", Kind: KindShort, Default: "3", Min: 1, From: "TransactionLogConfig"},
	{Name: "transaction.state.log.num.partitions", Kind: KindInt, Default: "50", Min: 1, From: "TransactionLogConfig"},
	{Name: "transaction.state.log.segment.bytes", Kind: KindInt, Default: "104857600", Min: 1, From: "TransactionLogConfig"},
	{Name: "transaction.partition.verification.enable", Kind: KindBool, Default: "true", Min: noMin, Dynamic: DynamicClusterWide, From: "TransactionLogConfig"},
	{Name: "producer.id.expiration.ms", Kind: KindInt, Default: "86400000", Min: 1, Dynamic: DynamicClusterWide, From: "TransactionLogConfig"},
	{Name: "producer.id.expiration.check.interval.ms", Kind: KindInt, Default: "600000", Min: 1, Internal: true, From: "TransactionLogConfig"},
	{Name: "transactional.id.expiration.ms", Kind: KindInt, Default: "604800000", Min: 1, From: "TransactionStateManagerConfig"},
	{Name: "transaction.max.timeout.ms", Kind: KindInt, Default: "900000", Min: 1, From: "TransactionStateManagerConfig"},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Kind: KindInt, Default: "10000", Min: 1, From: "TransactionStateManagerConfig"},
	{Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Kind: KindInt, Default: "3600000", Min: 1, From: "TransactionStateManagerConfig"},
	{Name: "controller.quorum.voters", Kind: KindList, Default: "", Min: noMin, From: "QuorumConfig"},
	{Name: "controller.quorum.bootstrap.servers", Kind: KindList, Default: "", Min: noMin, From: "QuorumConfig"},
	{Name: "controller.quorum.election.timeout.ms", Kind: KindInt, Default: "1000", Min: noMin, From: "QuorumConfig"},
	{Name: "controller.quorum.fetch.timeout.ms", Kind: KindInt, Default: "2000", Min: noMin, From: "QuorumConfig"},
	{Name: "controller.quorum.election.backoff.max.ms", Kind: KindInt, Default: "1000", Min: noMin, From: "QuorumConfig"},
	{Name: "controller.quorum.append.linger.ms", Kind: KindInt, Default: "25", Min: noMin, From: "QuorumConfig"},
	{Name: "controller.quorum.request.timeout.ms", Kind: KindInt, Default: "2000", Min: noMin, From: "QuorumConfig"},
	{Name: "controller.quorum.retry.backoff.ms", Kind: KindInt, Default: "20", Min: noMin, From: "QuorumConfig"},
	{Name: "metrics.num.samples", Kind: KindInt, Default: "2", Min: 1, From: "MetricConfigs"},
	{Name: "metrics.sample.window.ms", Kind: KindLong, Default: "30000", Min: 1, From: "MetricConfigs"},
	{Name: "metric.reporters", Kind: KindList, Default: "org.apache.kafka.common.metrics.JmxReporter", Min: noMin, Dynamic: DynamicClusterWide, From: "MetricConfigs"},
	{Name: "metrics.recording.level", Kind: KindString, Default: "INFO", Min: noMin, From: "MetricConfigs"},
	{Name: "kafka.metrics.reporters", Kind: KindList, Default: "", Min: noMin, From: "MetricConfigs"},
	{Name: "kafka.metrics.polling.interval.secs", Kind: KindInt, Default: "10", Min: 1, From: "MetricConfigs"},
	{Name: "telemetry.max.bytes", Kind: KindInt, Default: "1048576", Min: 1, From: "MetricConfigs"},
	{Name: "quota.window.num", Kind: KindInt, Default: "11", Min: 1, From: "QuotaConfig"},
	{Name: "replication.quota.window.num", Kind: KindInt, Default: "11", Min: 1, From: "QuotaConfig"},
	{Name: "alter.log.dirs.replication.quota.window.num", Kind: KindInt, Default: "11", Min: 1, From: "QuotaConfig"},
	{Name: "controller.quota.window.num", Kind: KindInt, Default: "11", Min: 1, From: "QuotaConfig"},
	{Name: "quota.window.size.seconds", Kind: KindInt, Default: "1", Min: 1, From: "QuotaConfig"},
	{Name: "replication.quota.window.size.seconds", Kind: KindInt, Default: "1", Min: 1, From: "QuotaConfig"},
	{Name: "alter.log.dirs.replication.quota.window.size.seconds", Kind: KindInt, Default: "1", Min: 1, From: "QuotaConfig"},
	{Name: "controller.quota.window.size.seconds", Kind: KindInt, Default: "1", Min: 1, From: "QuotaConfig"},
	{Name: "client.quota.callback.class", Kind: KindClass, Default: "", Min: noMin, From: "QuotaConfig"},
	{Name: "connections.max.reauth.ms", Kind: KindLong, Default: "0", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.server.max.receive.size", Kind: KindInt, Default: "524288", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "security.providers", Kind: KindString, Default: "", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "principal.builder.class", Kind: KindClass, Default: "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.client.auth", Kind: KindString, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.principal.mapping.rules", Kind: KindString, Default: "DEFAULT", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "ssl.allow.dn.changes", Kind: KindBool, Default: "false", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "ssl.allow.san.changes", Kind: KindBool, Default: "false", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "ssl.protocol", Kind: KindString, Default: "TLSv1.3", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.provider", Kind: KindString, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.enabled.protocols", Kind: KindList, Default: "TLSv1.2,TLSv1.3", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.keystore.type", Kind: KindString, Default: "JKS", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.keystore.location", Kind: KindString, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.keystore.password", Kind: KindPassword, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.key.password", Kind: KindPassword, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.keystore.key", Kind: KindPassword, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.keystore.certificate.chain", Kind: KindPassword, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.truststore.type", Kind: KindString, Default: "JKS", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.truststore.location", Kind: KindString, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.truststore.password", Kind: KindPassword, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.truststore.certificates", Kind: KindPassword, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.keymanager.algorithm", Kind: KindString, Default: "SunX509", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.trustmanager.algorithm", Kind: KindString, Default: "PKIX", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.endpoint.identification.algorithm", Kind: KindString, Default: "https", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.secure.random.implementation", Kind: KindString, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.cipher.suites", Kind: KindList, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "ssl.engine.factory.class", Kind: KindClass, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "sasl.mechanism.inter.broker.protocol", Kind: KindString, Default: "GSSAPI", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "sasl.enabled.mechanisms", Kind: KindList, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "sasl.server.callback.handler.class", Kind: KindClass, Default: "", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.kerberos.principal.to.local.rules", Kind: KindList, Default: "DEFAULT", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "sasl.jaas.config", Kind: KindPassword, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "sasl.client.callback.handler.class", Kind: KindClass, Default: "", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.login.class", Kind: KindClass, Default: "", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.login.callback.handler.class", Kind: KindClass, Default: "", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.kerberos.service.name", Kind: KindString, Default: "", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "sasl.kerberos.kinit.cmd", Kind: KindString, Default: "/usr/bin/kinit", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "sasl.kerberos.ticket.renew.window.factor", Kind: KindDouble, Default: "0.8", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "sasl.kerberos.ticket.renew.jitter", Kind: KindDouble, Default: "0.05", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "sasl.kerberos.min.time.before.relogin", Kind: KindLong, Default: "60000", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "sasl.login.refresh.window.factor", Kind: KindDouble, Default: "0.8", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "sasl.login.refresh.window.jitter", Kind: KindDouble, Default: "0.05", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "sasl.login.refresh.min.period.seconds", Kind: KindShort, Default: "60", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "sasl.login.refresh.buffer.seconds", Kind: KindShort, Default: "300", Min: noMin, Dynamic: DynamicPerBroker, From: "BrokerSecurityConfigs"},
	{Name: "sasl.login.connect.timeout.ms", Kind: KindInt, Default: "", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.login.read.timeout.ms", Kind: KindInt, Default: "", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.login.retry.backoff.max.ms", Kind: KindLong, Default: "10000", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.login.retry.backoff.ms", Kind: KindLong, Default: "100", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.oauthbearer.scope.claim.name", Kind: KindString, Default: "scope", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.oauthbearer.sub.claim.name", Kind: KindString, Default: "sub", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.oauthbearer.token.endpoint.url", Kind: KindString, Default: "", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.oauthbearer.jwks.endpoint.url", Kind: KindString, Default: "", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.oauthbearer.jwks.endpoint.refresh.ms", Kind: KindLong, Default: "3600000", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Kind: KindLong, Default: "100", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Kind: KindLong, Default: "10000", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.oauthbearer.clock.skew.seconds", Kind: KindInt, Default: "30", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.oauthbearer.expected.audience", Kind: KindList, Default: "", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "sasl.oauthbearer.expected.issuer", Kind: KindString, Default: "", Min: noMin, From: "BrokerSecurityConfigs"},
	{Name: "delegation.token.secret.key", Kind: KindPassword, Default: "", Min: noMin, From: "DelegationTokenManagerConfigs"},
	{Name: "delegation.token.max.lifetime.ms", Kind: KindLong, Default: "604800000", Min: 1, From: "DelegationTokenManagerConfigs"},
	{Name: "delegation.token.expiry.time.ms", Kind: KindLong, Default: "86400000", Min: 1, From: "DelegationTokenManagerConfigs"},
	{Name: "delegation.token.expiry.check.interval.ms", Kind: KindLong, Default: "3600000", Min: 1, From: "DelegationTokenManagerConfigs"},
	{Name: "password.encoder.secret", Kind: KindPassword, Default: "", Min: noMin, From: "PasswordEncoderConfigs"},
	{Name: "password.encoder.old.secret", Kind: KindPassword, Default: "", Min: noMin, From: "PasswordEncoderConfigs"},
	{Name: "password.encoder.keyfactory.algorithm", Kind: KindString, Default: "", Min: noMin, From: "PasswordEncoderConfigs"},
	{Name: "password.encoder.cipher.algorithm", Kind: KindString, Default: "AES/CBC/PKCS5Padding", Min: noMin, From: "PasswordEncoderConfigs"},
	{Name: "password.encoder.key.length", Kind: KindInt, Default: "128", Min: 8, From: "PasswordEncoderConfigs"},
	{Name: "password.encoder.iterations", Kind: KindInt, Default: "4096", Min: 1024, From: "PasswordEncoderConfigs"},
	// Kafka's broker-level replication quotas (QuotaConfig.brokerQuotaConfigs),
	// dynamic only: DynamicConfig.Broker adds them to the ConfigDef above.
	{Name: "leader.replication.throttled.rate", Kind: KindLong, Default: maxLong, Min: 0, Dynamic: DynamicClusterWide, From: "QuotaConfig"},
	{Name: "follower.replication.throttled.rate", Kind: KindLong, Default: maxLong, Min: 0, Dynamic: DynamicClusterWide, From: "QuotaConfig"},
	{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Kind: KindLong, Default: maxLong, Min: 0, Dynamic: DynamicClusterWide, From: "QuotaConfig"},
}

// actedOn are the Kafka settings of kafkaSettings minibroker acts on
// though its own table does not define them.
var actedOn = map[string]string{
	"offsets.topic.num.partitions":           "Partitions of __consumer_offsets when the broker creates it at start-up (an existing topic keeps its count).",
	"offsets.topic.segment.bytes":            "segment.bytes of __consumer_offsets when the broker creates it.",
	"transaction.state.log.num.partitions":   "Partitions of __transaction_state when the broker creates it at start-up (an existing topic keeps its count).",
	"transaction.state.log.segment.bytes":    "segment.bytes of __transaction_state when the broker creates it.",
	"transaction.state.log.min.isr":          "min.insync.replicas of __transaction_state when the broker creates it (accepted there, meaningless on one node).",
	"node.id":                                "This broker's node id (replaces --node-id when set; -1: not set).",
	"broker.id":                              "Kafka's older name of node.id; when both are set they must match.",
	"log.dirs":                               "The data directory (replaces --data-dir when set); one directory only.",
	"log.dir":                                "The data directory when log.dirs is not set (replaces --data-dir when set).",
	"log.retention.minutes":                  "log.retention.ms in minutes, when log.retention.ms is not set.",
	"log.retention.hours":                    "log.retention.ms in hours, when neither log.retention.ms nor log.retention.minutes is set.",
	"log.roll.hours":                         "log.roll.ms in hours, when log.roll.ms is not set.",
	"offsets.retention.minutes":              "offsets.retention.ms in minutes, when offsets.retention.ms is not set.",
	"controller.listener.names":              "Listeners named here are KRaft controller listeners: minibroker opens no socket for them.",
	"group.consumer.session.timeout.ms":      "A KIP-848 consumer group member not heard from for this long is removed (a group's consumer.session.timeout.ms overrides it).",
	"group.consumer.heartbeat.interval.ms":   "The heartbeat interval given to KIP-848 consumer group members (a group's consumer.heartbeat.interval.ms overrides it).",
	"group.consumer.max.size":                "The most members a KIP-848 consumer group takes (GROUP_MAX_SIZE_REACHED).",
	"group.consumer.assignors":               "The server-side assignors of KIP-848 consumer groups, first the default: uniform and range (Kafka's class names or these names); others are ignored.",
	"group.consumer.migration.policy":        "Online conversion between a classic group and a KIP-848 consumer group: bidirectional, upgrade, downgrade or disabled (docs/CONSUMER_GROUPS.md).",
	"group.share.session.timeout.ms":         "A share group member not heard from for this long is removed (a group's share.session.timeout.ms overrides it).",
	"group.share.heartbeat.interval.ms":      "The heartbeat interval given to share group members (a group's share.heartbeat.interval.ms overrides it).",
	"group.share.max.size":                   "The most members a share group takes (GROUP_MAX_SIZE_REACHED).",
	"group.share.record.lock.duration.ms":    "A share group's acquisition lock on a delivered record (a group's share.record.lock.duration.ms overrides it).",
	"group.share.delivery.count.limit":       "A share group record released or expired after this many deliveries is archived.",
	"group.share.partition.max.record.locks": "The most in-flight records of a share partition.",

	// The share coordinator's topic (internal/share/topicstore.go).
	"share.coordinator.state.topic.num.partitions":           "Partitions of __share_group_state when the broker creates it at start-up (an existing topic keeps its count).",
	"share.coordinator.state.topic.segment.bytes":            "segment.bytes of __share_group_state when the broker creates it.",
	"share.coordinator.snapshot.update.records.per.snapshot": "Update records the share coordinator writes to __share_group_state between two snapshot records of a share partition.",
}

// ignoredDoc says why a Kafka setting is accepted and ignored, by the
// class that defines it.
var ignoredDoc = map[string]string{
	"RemoteLogManagerConfig":        "Tiered storage: not served.",
	"KRaftConfigs":                  "KRaft: one node has no controller quorum.",
	"QuorumConfig":                  "KRaft: one node has no controller quorum.",
	"ReplicationConfigs":            "Replication between brokers: one node has no followers.",
	"GroupCoordinatorConfig":        "A group coordinator tuning or replication setting with no meaning on one node (minibroker's coordinator writes __consumer_offsets itself, docs/CONSUMER_GROUPS.md).",
	"CleanerConfig":                 "A log cleaner setting minibroker does not use (docs/COMPACTION.md).",
	"ShareGroupConfig":              "A share group setting minibroker does not act on (docs/SHARE_GROUPS.md).",
	"ShareCoordinatorConfig":        "A share coordinator tuning or replication setting with no meaning on one node (docs/SHARE_GROUPS.md).",
	"TransactionLogConfig":          "A transaction coordinator tuning or replication setting with no meaning on one node (minibroker's coordinator writes __transaction_state itself, docs/TRANSACTIONS.md).",
	"TransactionStateManagerConfig": "A transaction coordinator tuning or replication setting with no meaning on one node (minibroker's coordinator writes __transaction_state itself, docs/TRANSACTIONS.md).",
	"MetricConfigs":                 "JMX metrics: minibroker serves Prometheus /metrics.",
	"QuotaConfig":                   "Quota sampling windows and replication quotas: one node replicates nothing.",
	"BrokerSecurityConfigs":         "A security feature minibroker does not serve (JKS, Kerberos, OAUTHBEARER, plug-in classes).",
	"DelegationTokenManagerConfigs": "Delegation tokens: not served.",
	"PasswordEncoderConfigs":        "The password encoder of dynamic configs in ZooKeeper.",
}

// mergeKafkaSettings adds kafkaSettings to the settings table.
func mergeKafkaSettings() {
	index := func() {
		byName, byTopic = map[string]int{}, map[string]int{}
		for i, s := range settings {
			if s.Name != "" {
				byName[s.Name] = i
			}
			if s.Topic != "" {
				byTopic[s.Topic] = i
			}
		}
	}
	index()
	for _, k := range kafkaSettings {
		if i, ok := byName[k.Name]; ok {
			settings[i].Dynamic, settings[i].From = k.Dynamic, k.From
			continue
		}
		if i, ok := byTopic[k.Topic]; ok && k.Topic != "" && settings[i].Name == "" {
			settings[i].Name, settings[i].Dynamic, settings[i].From = k.Name, k.Dynamic, k.From
			byName[k.Name] = i
			continue
		}
		if doc, ok := actedOn[k.Name]; ok {
			k.Doc = doc
		} else {
			k.Ignored = true
			k.Doc = ignoredDoc[k.From]
			if k.Doc == "" {
				k.Doc = "Kafka's; not acted on by one node."
			}
		}
		settings = append(settings, k)
		byName[k.Name] = len(settings) - 1
	}
	index()
}

// byName and byTopic index the settings table, built once at init.
var byName, byTopic map[string]int

// checkGzipLevel is Kafka's gzip level rule: 1 to 9, or -1 (the default).
func checkGzipLevel(v string) error {
	n, _ := strconv.Atoi(v)
	if n == 0 {
		return fmt.Errorf("value must be between 1 and 9 or equal to -1")
	}
	return nil
}

// checkPoolSize is Kafka's remote log thread pool rule: -1 or at least 1.
func checkPoolSize(v string) error {
	n, _ := strconv.Atoi(v)
	if n == 0 {
		return fmt.Errorf("value must be -1 or at least 1")
	}
	return nil
}

// checkMigrationPolicy is group.consumer.migration.policy's rule (any
// case, as Kafka's CaseInsensitiveValidString).
func checkMigrationPolicy(v string) error {
	switch strings.ToLower(v) {
	case "bidirectional", "upgrade", "downgrade", "disabled":
		return nil
	}
	return fmt.Errorf("string must be one of: bidirectional, upgrade, downgrade, disabled (any case)")
}

// checkHalf is Kafka's between(0, 0.5) (a DOUBLE bound the table's
// integer Max cannot hold).
func checkHalf(v string) error {
	if f, _ := strconv.ParseFloat(v, 64); f > 0.5 {
		return fmt.Errorf("value must be no more than 0.5")
	}
	return nil
}

// metadataVersion is the form of Kafka's MetadataVersion strings
// (0.10.2, 0.10.0-IV1, 2.8, 3.0-IV1, 4.0-IV0), as MetadataVersionValidator
// accepts them.
var metadataVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?(-IV[0-9]+)?$`)

func checkMetadataVersion(v string) error {
	if !metadataVersion.MatchString(v) {
		return fmt.Errorf("not a Kafka version (such as 2.8 or 3.0-IV1)")
	}
	return nil
}

// checkThrottledReplicas is Kafka's ThrottledReplicaListValidator: "*", or
// partition:broker pairs.
func checkThrottledReplicas(v string) error {
	parts := SplitList(v)
	if len(parts) == 1 && parts[0] == "*" {
		return nil
	}
	for _, p := range parts {
		a, b, ok := strings.Cut(p, ":")
		if _, err := strconv.Atoi(strings.TrimSpace(a)); !ok || err != nil {
			return fmt.Errorf("must be the literal '*' or a list of replicas in the format [partitionId]:[brokerId]")
		}
		if _, err := strconv.Atoi(strings.TrimSpace(b)); err != nil {
			return fmt.Errorf("must be the literal '*' or a list of replicas in the format [partitionId]:[brokerId]")
		}
	}
	return nil
}
