// Package log is minibroker's segmented on-disk log for one partition,
// laid out as Apache Kafka lays it out (LogSegment, LogLoader, the index
// and checkpoint files): segments, offset and time indexes, the
// transaction index, the leader-epoch cache, recovery of a torn tail,
// truncation, retention and the fsync policy. It knows nothing of
// producers or the protocol; callers hand it record batches whose base
// offsets are already set.
//
// # Files in a partition directory
//
//	<base>.log                  record batches, base = 20-digit first offset
//	<base>.index                offset index
//	<base>.timeindex            time index
//	<base>.txnindex             aborted transactions (created on first use)
//	leader-epoch-checkpoint     leader-epoch cache
//	log-start-offset            log start offset after DeleteRecords
//	clean-shutdown              written by Close, removed by Open
//
// All integers are big endian. Every file is written through vfs.FS.
//
// # <base>.log
//
// A concatenation of magic-v2 record batches exactly as clients and
// mirrored clusters sent them (see internal/batch for the 61-byte
// header). Batches are whole and their offsets strictly increase; gaps
// are allowed. A segment holds at most 2^31-1 bytes and offsets
// base..base+2^31-1, so index entries fit in int32.
//
//	+----------------+----------------+----------------+---
//	| batch (v2)     | batch (v2)     | batch (v2)     | ...
//	+----------------+----------------+----------------+---
//
// # <base>.index (entry: 8 bytes)
//
// One entry per log.index.interval.bytes of log written: the last offset
// of a batch and the byte position where that batch starts. Entries
// increase in both fields. The file holds exactly its entries (no
// preallocation); a torn trailing entry is dropped on open.
//
//	0      4       8
//	+------+-------+
//	| rel  | pos   |   rel = lastOffset - base (int32), pos = int32
//	+------+-------+
//
// # <base>.timeindex (entry: 12 bytes)
//
// Written with each offset-index entry when the segment's max timestamp
// has grown, and once more when the segment stops being active (roll,
// Close), so the last entry is the segment's max timestamp. The offset is
// the base offset of the batch that carried the timestamp.
//
//	0              8      12
//	+--------------+------+
//	| timestamp    | rel  |   timestamp = int64 ms, rel = offset - base (int32)
//	+--------------+------+
//
// # <base>.txnindex (entry: 34 bytes)
//
// Aborted transactions whose ABORT marker lies in this segment, in marker
// order (Kafka's TransactionIndex).
//
//	0    2            10           18           26           34
//	+----+------------+------------+------------+------------+
//	| v  | producerId | firstOff   | lastOff    | lastStable |
//	+----+------------+------------+------------+------------+
//	v = int16 entry version, 0
//
// # leader-epoch-checkpoint (text)
//
// Kafka's checkpoint format: a version line (0), a count line, then one
// "epoch startOffset" line per entry, epochs and offsets strictly
// increasing. Rewritten atomically (temp file, fsync, rename, dir fsync)
// whenever the cache changes.
//
//	0\n
//	2\n
//	0 0\n
//	3 1200\n
//
// # log-start-offset and clean-shutdown (text)
//
// Kafka keeps these per data directory; minibroker keeps them per
// partition directory so a Log is self-contained. Both are a version line
// (0) and one offset line, written atomically:
//
//	0\n
//	<offset>\n
//
// log-start-offset holds the log start offset set by DeleteRecordsBefore
// (the effective start is the larger of it and the first segment's
// base). clean-shutdown holds the log end offset at Close; Open removes
// it, and opens without scanning only if it is present and agrees with the
// log. Without it Open validates every batch (length, magic, CRC32C,
// increasing offsets) from the segment holding Options.RecoveryPoint, cuts
// the log at the first damaged byte and rebuilds the indexes.
package log
