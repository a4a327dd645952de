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
//	<base>.index                offset index (created when it gets entries)
//	<base>.timeindex            time index (created when it gets entries)
//	<base>.txnindex             aborted transactions (created on first use)
//	leader-epoch-checkpoint     leader-epoch cache
//	log-start-offset            log start offset after DeleteRecords
//	recovery-point              offset below which data and indexes are fsynced
//	clean-shutdown              written by Close, removed by Open
//	cleaner-offset-checkpoint   the log cleaner's first dirty offset (clean.go)
//	<base>.*.cleaned, .swap     a cleaned segment being swapped in (clean_swap.go)
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
// Both index files are lazy (Kafka's LazyIndex): a new segment has none.
// A file is created when entries are first written to it: 4 KiB of
// entries have gathered in memory, or a full flush (roll, Flush,
// log.flush.interval.ms, Close) makes the index durable; the time index
// file is then created, empty if need be, as soon as the offset index has
// entries. An existing segment's index is opened at start-up only to
// read its length and last entry, and again when a lookup needs an
// entry before the last one, or when it is written or truncated. A
// missing file is an empty index: an open after a clean shutdown (or
// below the recovery point) treats it as damage, and rebuilds the
// segment's indexes, only where one must exist: the offset index of a
// sealed non-empty segment (the roll wrote its sealing entry), the time
// index of a segment whose offset index has entries, and the offset index
// of an active segment holding more than log.index.interval.bytes before
// its last batch.
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
// by truncation and retention before they return, and, for new epochs
// seen by Append, by the next full flush (roll, log.flush.interval.ms,
// Flush, Close) before the recovery point moves past them. So entries
// below the recovery point are always in the file, and an unclean Open,
// which scans from the recovery point, keeps the file's entries below
// the segment it scans from and reassigns the rest from the batches'
// partition leader epochs: after any crash the cache is exactly what a
// scan of the surviving log gives.
//
//	0\n
//	2\n
//	0 0\n
//	3 1200\n
//
// # log-start-offset, recovery-point, clean-shutdown and cleaner-offset-checkpoint (text)
//
// Kafka keeps these per data directory; minibroker keeps them per
// partition directory so a Log is self-contained. Each is a version line
// (0) and one offset line, written atomically:
//
//	0\n
//	<offset>\n
//
// log-start-offset holds the log start offset set by DeleteRecordsBefore
// (the effective start is the larger of it and the first segment's
// base). recovery-point is rewritten after full flushes and lowered by
// truncation before it returns. clean-shutdown holds the log end offset at
// Close; Open removes it, and opens without scanning only if it is present
// and agrees with the log. Close writes clean-shutdown through a temp
// file and a rename but without fsyncs, after it fsynced the data (Kafka
// does not fsync its clean-shutdown file's directory either), and
// recovery-point the same way but with the temp file fsynced: a copy
// renamed over it unsynced could become an empty file once a later
// directory fsync made the rename durable, i.e. no recovery point, and
// recovery keeps gaps between segments only below the recovery point. A
// power loss soon after a clean shutdown can only lose the marker and
// the new recovery point, which makes the next Open recover from the
// older one. Every other write of these files is fsynced. Without the
// marker Open validates every batch (length,
// magic, CRC32C, increasing offsets) from the segment holding the recovery
// point (the lower of recovery-point and Options.RecoveryPoint), cuts the
// log at the first damaged byte and rebuilds the indexes.
//
// # Durability
//
// Append writes with write(2) and never waits for an fsync. FlushedOffset
// is the offset below which the segment data is fsynced; with
// log.flush.interval.messages=1 a producer is acknowledged after
// WaitFlushed(end offset), which shares one fsync among concurrent
// waiters (group commit) and fsyncs only segment data. RecoveryPoint is
// the offset below which the indexes and the leader-epoch entries are
// durable too (full flushes: on roll, every log.flush.interval.ms, Flush,
// Close); an unclean Open given it rebuilds the indexes and reassigns the
// epochs from there. Opening a new log (no segment yet) fsyncs nothing,
// as Kafka's log creation: the first flush fsyncs the directory before
// anything in it counts as durable. TruncateTo fsyncs the cut before it
// returns, so truncated batches never reappear after a power loss. After a
// failed fsync (or a write failure that is not retryable, retry.go) the
// log refuses writes (ErrStorage) and serves only data below
// FlushedOffset; a restart recovers it. A segment roll refused by the
// file system, or a write refused for lack of space, leaves the log
// writable once what it left is undone (retry.go).
//
// A roll fsyncs nothing on the append path: the old segment's data and
// indexes, its sealing index entry included, are fsynced by the roll's
// background full flush (as Kafka flushes rolled segments). If a power
// loss keeps a later segment's data but not the end of an earlier one
// (write-back order across files is not guaranteed), an unclean open sees
// a segment above the recovery point that starts past the end of the one
// before it, and cuts the log there, so the log is always a prefix of what
// was written, never a log with a hole in the middle. Gaps between
// segments are therefore kept only below the recovery point: a roll to a
// base past the log end (a mirrored batch after a gap in the source's
// offsets, the only append past the log end) first runs a full flush and
// moves the recovery point to that base, and the cleaner keeps the last
// batch of every group it cleans, so a cleaned segment ends where the
// next one starts.
//
// # Reads
//
// Read, ReadUpTo and ReadAppend locate the batch with the offset index
// (entries are checked against the batch they name, and a scan from the
// segment start replaces an index that disagrees), then pread whole
// batches into the caller's buffer. The framing of each batch served is
// checked (length, magic, header sanity, increasing offsets); its CRC32C
// is checked at most once per process lifetime. Truncation, retention
// and Close wait for readers in flight (truncMu), so a reader never sees
// freed or reused bytes.
//
// ReadSpan is the zero-copy read (Kafka's FileRecords.writeTo): when the
// batches come to at least the caller's minimum and are all verified, it
// measures them by their headers and returns them as a Span, a range of
// a duplicated descriptor of the segment file, which the broker sends to
// the socket with sendfile(2) after the read returned. The duplicate
// keeps the bytes readable if the segment is deleted or closed meanwhile;
// appends never change them; TruncateTo (only a mirror truncates) waits
// until the log has no span out (Span.Close, after the send) before it
// cuts, for at most 30 s, then fails with ErrSpansOutstanding for the
// caller to retry. Bytes not verified in this process are always read
// and checked.
//
// Each segment keeps which of its bytes are verified, i.e. had their CRCs
// checked in this process: a prefix from the segment start and a suffix
// up to its end (verify.go). Verified are the batches recovery validated
// (every segment from the one holding the recovery point, after an
// unclean shutdown), the batches written with AppendVerified (whose
// callers checked or computed the CRCs: the partition's produce, mirror
// and control-batch paths), and batches a read checked and found good,
// when they extend the prefix or the suffix. A read checks the CRC of
// every batch outside the two, and counts the batches
// verified only after they pass; truncation lowers both to the cut. A
// clean open verifies nothing, so damage that appeared while the broker
// was down surfaces as a *CorruptionError (KAFKA_STORAGE_ERROR at the
// broker) on the first read after open, never as bytes; bytes written
// with Append count as unverified too.
//
// The trade-off, accepted as Kafka accepts it: damage that appears on
// disk after a batch was verified in this process (a disk corrupting
// data at rest, once the page cache has dropped it) is served to clients
// as it is, and only their CRC check (Kafka clients check by default:
// check.crcs) or the next restart reports it. Apache Kafka never checks
// CRCs when serving a Fetch: LogSegment.read hands out a slice of the
// file, sent with sendfile; it validates batches when appending
// (LogValidator) and in recovery (LogSegment.recover, ensureValid) only.
// minibroker still checks once per lifetime what neither its own
// recovery nor an append in this process checked.
//
// # Differences from Kafka
//
//   - Index files are not preallocated or memory-mapped; new entries are
//     buffered in memory (4 KiB) and the file length is the entry count.
//     At roll the offset index gets an extra entry for the last batch.
//   - Kafka creates and maps the active segment's index files when it
//     loads a log (LogLoader: resizeIndexes) and, having mapped them,
//     keeps no file descriptor. minibroker reads indexes with pread, so
//     an open index costs a descriptor: it creates an index file only
//     when it has entries to write and opens one only when a lookup, a
//     write or a truncation needs it. A new partition holds one
//     descriptor, its .log.
//   - The time index stores the base offset of the batch that carried the
//     timestamp. OffsetForTimestamp and MaxTimestamp decompress the one
//     batch that holds the answer (gzip, snappy raw or xerial, lz4, zstd;
//     at most 64 MiB inflated) to name the exact record.
//   - TruncateTo into the middle of a batch removes the whole batch: the
//     log end offset becomes that batch's base offset.
//   - An empty log adopts the first appended batch's base offset as its
//     log start offset (a mirror starting at the source's log start).
//   - Reads check the CRC of a batch that neither recovery nor a checked
//     append verified in this process, once (see Reads); Kafka never
//     checks CRCs when serving a Fetch.
package log
