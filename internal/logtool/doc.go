// Package logtool reads a partition directory the way an operator needs
// to during a failover: it decodes every file the log, the producer state
// manager and the mirror leave there, and audits a log for producer-id
// collisions. It backs `minibroker dump-log` and `minibroker verify-log`;
// it has no command-line code of its own.
//
// Everything is read-only: files are opened with os.Open (O_RDONLY), never
// locked, never repaired, so a running broker's data directory can be read.
// A batch the broker is appending while it is read shows up as a torn tail.
//
// # dump-log
//
// Dumper prints, as text modelled on kafka-dump-log.sh or as one JSON
// object per line (field names in json.go are stable):
//
//   - <base>.log: every batch (offsets, count, position, size, magic, codec,
//     CRC and whether it matches, timestamp type, base and max timestamp,
//     transactional/control flags, producer id/epoch, base and last
//     sequence, partition leader epoch). Control records are always
//     decoded: COMMIT/ABORT with the coordinator epoch, MIRROR_PID_RESET
//     with Version and SourceClusterId, anything else as raw key/value hex.
//     With PrintData every record (key, value, headers), decompressing gzip,
//     snappy (raw or xerial framed), lz4 and zstd, bounded by
//     MaxDecompressedBytes.
//   - .index, .timeindex, .txnindex: the entries, made absolute. Kafka's
//     zero preallocation ends the entries; a partial entry is a torn tail.
//     With Deep each entry is checked against the segment (Kafka's index
//     sanity check; see segmentMap).
//   - <offset>.snapshot: minibroker's producer snapshot (psm). With Deep,
//     the snapshot is compared with a replay (psm, origin REPLICATION) of
//     the directory's segments below its offset.
//   - leader-epoch-checkpoint, log-start-offset, clean-shutdown, and Kafka's
//     recovery-point-offset-checkpoint and log-start-offset-checkpoint,
//     parsed by the log's own parser (log.ParseCheckpoint) without the
//     log's rules, so a file the broker would ignore is still shown; one
//     whose layout does not parse is a Damage.
//
// A batch that can be framed (its length fits the file) is printed even
// when its CRC, magic or header fields are wrong, with the problems listed,
// and the dump goes on; a length that cannot frame a batch ends that
// segment with a Damage (position, reason, bytes not read).
//
// # verify-log
//
// Verifier replays a partition's batches per producer id from the Kafka
// log format alone and reports, as Findings, each place where one producer
// id shows a history one producer cannot have, unless a MIRROR_PID_RESET
// barrier lies between the two parts. FindingKinds lists the kinds with
// their severity: "impossible" (no single producer writing through a Kafka
// broker leaves it), "suspicious" (a collision leaves it, but so can
// compaction, expiry or a retried marker), "damage".
//
// Like a broker, the verifier accepts anything from a producer id it does
// not know: first seen, seen again after a barrier, or idle (by batch max
// timestamps) for VerifyOptions.ProducerIDExpirationMs. A collision whose
// second producer was refused or swallowed by the broker (a failover
// without the barrier: its batches were answered as duplicates) leaves nothing in
// the log, and verify-log cannot see it.
package logtool
