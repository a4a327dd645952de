package log

import (
	"errors"
	"fmt"
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/vfs"
)

// Config holds the Kafka topic/broker settings that shape one log. Field
// comments name the Kafka setting each mirrors.
type Config struct {
	SegmentBytes          int64 // log.segment.bytes, default 1 GiB (at most 2 GiB-1: index positions are int32)
	IndexIntervalBytes    int   // log.index.interval.bytes, default 4096
	SegmentIndexBytes     int   // log.index.size.max.bytes, default 10 MiB; a segment rolls when an index would outgrow it
	RetentionMs           int64 // log.retention.ms, -1 = forever, default 7 days
	RetentionBytes        int64 // log.retention.bytes, -1 = unlimited
	FlushIntervalMessages int64 // log.flush.interval.messages, default math.MaxInt64 (background flushing only)
	FlushIntervalMs       int64 // log.flush.interval.ms, <= 0 or math.MaxInt64 = none
	SegmentMs             int64 // log.roll.ms, default 7 days
	// WritebackBytes: the active segment's write-behind window
	// (writeback.go; minibroker's log.writeback.bytes), 0 = none.
	WritebackBytes int64
	// DropBehindBytes: once written back, the active segment's pages
	// more than this many bytes behind its end leave the page cache
	// (writeback.go; minibroker's log.writeback.drop.behind.bytes), 0 =
	// never (the kernel's LRU decides, as for Kafka); by default
	// AutoDropBehind (pagereport.go). Needs WritebackBytes.
	DropBehindBytes int64
	// Preallocate: reserve the active segment's blocks ahead of its
	// writes (prealloc.go; Kafka's log.preallocate, default false).
	Preallocate bool

	// Compaction (clean.go). Compact: cleanup.policy holds compact.
	// NoDelete: it does not hold delete, so retention.ms and
	// retention.bytes are not applied (a compacted-only topic).
	Compact, NoDelete      bool
	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio, default 0.5
	MinCompactionLagMs     int64   // min.compaction.lag.ms, default 0
	MaxCompactionLagMs     int64   // max.compaction.lag.ms, default (and <= 0) none
	DeleteRetentionMs      int64   // delete.retention.ms, default 1 day: tombstones and markers kept this long after their first cleaning
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	week := int64(7 * 24 * time.Hour / time.Millisecond)
	return Config{
		SegmentBytes:          1 << 30,
		IndexIntervalBytes:    4096,
		SegmentIndexBytes:     10 << 20,
		RetentionMs:           week,
		RetentionBytes:        -1,
		FlushIntervalMessages: math.MaxInt64,
		FlushIntervalMs:       math.MaxInt64,
		SegmentMs:             week,
		WritebackBytes:        DefaultWritebackBytes,
		DropBehindBytes:       AutoDropBehind(),

		MinCleanableDirtyRatio: 0.5,
		MaxCompactionLagMs:     math.MaxInt64,
		DeleteRetentionMs:      int64(24 * time.Hour / time.Millisecond),
	}
}

// normalized fills zero fields with defaults and clamps values the on-disk
// formats cannot represent.
func (c Config) normalized() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentBytes > math.MaxInt32 {
		c.SegmentBytes = math.MaxInt32
	}
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.SegmentIndexBytes < offsetEntrySize*4 {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	// RetentionMs and RetentionBytes 0 are Kafka's "delete every segment
	// but the active one at the next retention run", not unset.
	if c.FlushIntervalMessages <= 0 {
		c.FlushIntervalMessages = d.FlushIntervalMessages
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	return c
}

// SetConfig applies new settings to the open log, as Kafka's
// UnifiedLog.updateConfig: the next append rolls by the new segment size,
// age and index limits and fsyncs by the new flush.messages, the next
// ApplyRetention deletes by the new retention, and the background flush
// follows the new flush.ms. Segments already written are not rewritten.
func (l *Log) SetConfig(cfg Config) {
	cfg = cfg.normalized()
	l.appendMu.Lock()
	l.mu.Lock()
	old := l.cfg
	l.cfg = cfg
	l.mu.Unlock()
	l.appendMu.Unlock()
	if old.flushInterval() != cfg.flushInterval() && l.flusher != nil {
		l.flusher.setPeriod(cfg.flushInterval())
	}
}

// flushInterval is the background flush period, or 0 for none.
func (c Config) flushInterval() time.Duration {
	if c.FlushIntervalMs <= 0 || c.FlushIntervalMs == math.MaxInt64 {
		return 0
	}
	return time.Duration(c.FlushIntervalMs) * time.Millisecond
}

// Options are the collaborators a Log is given.
type Options struct {
	FS     vfs.FS           // nil → vfs.Default
	Logger *zap.Logger      // nil → zap.NewNop()
	Now    func() time.Time // nil → time.Now
	// OnRoll is called (without any Log lock held) after the log rolled to
	// a new active segment starting at newBaseOffset.
	OnRoll func(newBaseOffset int64)
	// BeforeBackgroundFlush is called by the background flusher (without
	// any Log lock held) before each full flush it runs: after a roll, on
	// FlushInBackground, every log.flush.interval.ms. The partition fsyncs
	// there the producer snapshots it wrote without fsync at rolls, as
	// Kafka's flush-log task fsyncs the roll's snapshot before the segment.
	BeforeBackgroundFlush func()
	// RecoveryPoint is the offset below which data is known to be fsynced
	// (Kafka's recovery-point-offset-checkpoint, kept by the broker per
	// data dir). After an unclean shutdown only segments from the one
	// containing it onwards are scanned. 0 scans everything.
	RecoveryPoint int64

	// private are the test seams (knobs.go): unexported, so no config
	// file, flag or API sets them; the zero value is production. Only
	// this package's tests set them.
	private knobs
}

func (o Options) normalized() Options {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.private.spanDrainTimeout <= 0 {
		o.private.spanDrainTimeout = spanDrainTimeout
	}
	return o
}

// Errors. The partition maps ErrStorage to KAFKA_STORAGE_ERROR and
// ErrOffsetOutOfRange to OFFSET_OUT_OF_RANGE.
var (
	ErrOffsetOutOfRange = errors.New("log: offset out of range")
	ErrClosed           = errors.New("log: closed")
	ErrStorage          = errors.New("log: storage error")
	// ErrInvalidBatch rejects an Append whose framing is wrong or whose
	// offsets do not continue the log.
	ErrInvalidBatch = errors.New("log: invalid batch")
	// ErrSpansOutstanding refuses a TruncateTo while Spans of the log are
	// still being sent after spanDrainTimeout; the caller tries again.
	ErrSpansOutstanding = errors.New("log: fetch responses still sending from the log")
)

// CorruptionError reports damaged data found in a segment: a torn tail, a
// bad CRC, a broken length or offsets that go backwards. Recovery finds it
// with errors.As and truncates at Offset (a byte position in Segment).
type CorruptionError struct {
	Segment string // file name of the damaged segment or index
	Offset  int64  // byte position of the first damaged byte
	Err     error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("log: corruption in %s at byte %d: %v", e.Segment, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// Is makes a CorruptionError an ErrStorage too, so that callers mapping
// errors to Kafka codes answer KAFKA_STORAGE_ERROR for damaged data.
func (e *CorruptionError) Is(target error) bool { return target == ErrStorage }

func storageErr(op, name string, err error) error {
	return fmt.Errorf("%w: %s %s: %w", ErrStorage, op, name, err)
}
