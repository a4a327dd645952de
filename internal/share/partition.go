// Package share is KIP-932's share groups ("queues for Kafka"): the
// per-partition delivery state (SharePartition in Kafka's
// core/src/main/java/kafka/server/share/SharePartition.java), the share
// group membership and assignment, share sessions and the durable state.
//
// A share partition is a window of in-flight records, from the share
// partition start offset (SPSO, Start) to the share partition end offset
// (SPEO, End()-1). Every offset in the window is in one state: AVAILABLE
// (may be acquired), ACQUIRED (locked by one member until the
// acquisition lock expires), ACKNOWLEDGED (accepted) or ARCHIVED
// (rejected, past the delivery count limit, an aborted transaction's
// record under read_committed, a control record, or an offset the log no
// longer has). The SPSO moves past leading ACKNOWLEDGED and ARCHIVED
// records; the window never holds more than MaxInFlight offsets
// (group.share.partition.max.record.locks). Everything here is pure: the
// caller passes the time and the log's batches.
package share

import (
	"errors"
	"time"
)

// State is a record's delivery state, numbered as Kafka's RecordState
// (AVAILABLE 0, ACQUIRED 1, ACKNOWLEDGED 2, ARCHIVED 4).
type State int8

const (
	Available    State = 0
	Acquired     State = 1
	Acknowledged State = 2
	Archived     State = 4
)

func (s State) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archived:
		return "ARCHIVED"
	}
	return "UNKNOWN"
}

// Acknowledgement types of ShareFetch and ShareAcknowledge (KIP-932;
// RENEW is KIP-1222, version 2).
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4
)

// Errors of Ack, mapped by the broker to Kafka's codes.
var (
	ErrInvalidRequest     = errors.New("share: invalid acknowledgement batch")     // INVALID_REQUEST
	ErrInvalidRecordState = errors.New("share: record not acquired by the member") // INVALID_RECORD_STATE
)

// Config is a partition's limits.
type Config struct {
	// LockDuration is the acquisition lock (group.share.record.lock.duration.ms,
	// a group's share.record.lock.duration.ms).
	LockDuration time.Duration
	// DeliveryLimit is group.share.delivery.count.limit: a record
	// released or expired after this many deliveries is archived.
	DeliveryLimit int16
	// MaxInFlight is group.share.partition.max.record.locks.
	MaxInFlight int
}

type record struct {
	state    State
	count    int16 // deliveries so far
	member   string
	deadline time.Time
}

// Partition is one share partition's state.
type Partition struct {
	cfg   Config
	start int64    // SPSO
	recs  []record // offsets start … start+len(recs)-1
}

// NewPartition starts an empty window at start (share.auto.offset.reset
// chose it: the log start offset or the high watermark).
func NewPartition(cfg Config, start int64) *Partition {
	return &Partition{cfg: cfg, start: start}
}

// SetConfig replaces the limits (a group config changed).
func (p *Partition) SetConfig(cfg Config) { p.cfg = cfg }

// Start is the SPSO.
func (p *Partition) Start() int64 { return p.start }

// End is one past the SPEO: the next offset not yet in the window.
func (p *Partition) End() int64 { return p.start + int64(len(p.recs)) }

// InFlight is the number of offsets in the window.
func (p *Partition) InFlight() int { return len(p.recs) }

// StateOf reports an offset's state and delivery count; below the SPSO
// ACKNOWLEDGED (finished), past the window AVAILABLE with 0 deliveries.
func (p *Partition) StateOf(off int64) (State, int16) {
	switch {
	case off < p.start:
		return Acknowledged, 0
	case off >= p.End():
		return Available, 0
	}
	r := p.recs[off-p.start]
	return r.state, r.count
}

// FetchOffset is where a fetch reads from: the first AVAILABLE offset in
// the window, else End().
func (p *Partition) FetchOffset() int64 {
	for i := range p.recs {
		if p.recs[i].state == Available {
			return p.start + int64(i)
		}
	}
	return p.End()
}

// CanAcquire reports whether a fetch could acquire anything below limit
// (the high watermark, or the last stable offset under read_committed).
func (p *Partition) CanAcquire(limit int64) bool {
	for i := range p.recs {
		if p.recs[i].state == Available && p.start+int64(i) < limit {
			return true
		}
	}
	return p.End() < limit && len(p.recs) < p.cfg.MaxInFlight
}

// Batch is one record batch of the log as the acquisition sees it: its
// offsets, and Skip for a batch never to deliver (a control batch, or a
// transaction's records aborted under read_committed).
type Batch struct {
	First, Last int64
	Skip        bool
}

// Range is an acquired run of offsets with one delivery count, as
// ShareFetch's AcquiredRecords.
type Range struct {
	First, Last   int64
	DeliveryCount int16
}

// Acquire locks up to max records for member, from the batches the log
// holds starting at from (the FetchOffset the caller read at), below
// limit. Offsets in the window between from and the last batch that no
// batch covers (gone from the log) are archived, as are Skip batches. The
// window does not grow past MaxInFlight offsets.
func (p *Partition) Acquire(now time.Time, member string, max int, from, limit int64, batches []Batch) []Range {
	var out []Range
	n := 0
	next := from // offsets below next are covered or handled
	deadline := now.Add(p.cfg.LockDuration)
	acquireAt := func(off int64, skip bool) bool {
		idx := off - p.start
		if idx < 0 {
			return true
		}
		for idx > int64(len(p.recs)) { // a hole between End and off: gone from the log
			if len(p.recs) >= p.cfg.MaxInFlight {
				return false
			}
			p.recs = append(p.recs, record{state: Archived})
		}
		if idx == int64(len(p.recs)) {
			if len(p.recs) >= p.cfg.MaxInFlight {
				return false
			}
			p.recs = append(p.recs, record{state: Available})
		}
		r := &p.recs[idx]
		if r.state != Available {
			return true
		}
		if skip || r.count >= p.cfg.DeliveryLimit {
			*r = record{state: Archived, count: r.count}
			return true
		}
		r.state, r.member, r.deadline = Acquired, member, deadline
		r.count++
		n++
		if k := len(out); k > 0 && out[k-1].Last == off-1 && out[k-1].DeliveryCount == r.count {
			out[k-1].Last = off
		} else {
			out = append(out, Range{First: off, Last: off, DeliveryCount: r.count})
		}
		return true
	}
	archiveHole := func(upTo int64) { // Available offsets in [next, upTo) the log does not hold
		for off := max64(next, p.start); off < upTo && off < p.End(); off++ {
			if r := &p.recs[off-p.start]; r.state == Available {
				*r = record{state: Archived, count: r.count}
			}
		}
	}
outer:
	for _, b := range batches {
		if b.Last < next {
			continue
		}
		archiveHole(b.First)
		for off := max64(b.First, next); off <= b.Last; off++ {
			if off >= limit || n >= max {
				break outer
			}
			if !acquireAt(off, b.Skip) {
				break outer
			}
			next = off + 1
		}
	}
	p.advance()
	return out
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// AckBatch is one acknowledgement batch: offsets First…Last and either
// one type for all of them or one type per offset.
type AckBatch struct {
	First, Last int64
	Types       []int8
}

// ValidateBatches checks the batches' shape (Kafka's
// validateAcknowledgementBatches): ordered, non-overlapping, types in
// range (RENEW only when renew is allowed).
func ValidateBatches(batches []AckBatch, renew bool) error {
	prev := int64(-1)
	maxType := AckReject
	if renew {
		maxType = AckRenew
	}
	for _, b := range batches {
		if b.First > b.Last || b.First <= prev || b.First < 0 || len(b.Types) == 0 {
			return ErrInvalidRequest
		}
		if len(b.Types) > 1 && int64(len(b.Types)) != b.Last-b.First+1 {
			return ErrInvalidRequest
		}
		for _, t := range b.Types {
			if t < AckGap || t > maxType {
				return ErrInvalidRequest
			}
		}
		prev = b.Last
	}
	return nil
}

// Ack applies member's acknowledgements, all or none: every offset at
// or past the SPSO must be in the window and ACQUIRED by member (offsets
// below the SPSO are finished and skipped). ACCEPT acknowledges, REJECT
// and GAP archive, RELEASE makes the record AVAILABLE again (ARCHIVED at
// the delivery count limit), RENEW restarts its acquisition lock.
// It reports whether any record became AVAILABLE.
func (p *Partition) Ack(now time.Time, member string, batches []AckBatch) (released bool, err error) {
	for _, b := range batches {
		if b.Last >= p.End() {
			return false, ErrInvalidRequest
		}
		for off := max64(b.First, p.start); off <= b.Last; off++ {
			r := p.recs[off-p.start]
			if r.state != Acquired || r.member != member {
				return false, ErrInvalidRecordState
			}
		}
	}
	for _, b := range batches {
		for off := max64(b.First, p.start); off <= b.Last; off++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[off-b.First]
			}
			r := &p.recs[off-p.start]
			switch t {
			case AckAccept:
				*r = record{state: Acknowledged, count: r.count}
			case AckGap, AckReject:
				*r = record{state: Archived, count: r.count}
			case AckRelease:
				if p.release(r) {
					released = true
				}
			case AckRenew:
				r.deadline = now.Add(p.cfg.LockDuration)
			}
		}
	}
	p.advance()
	return released, nil
}

// release ends an acquisition: AVAILABLE again, or ARCHIVED when the
// record has been delivered DeliveryLimit times.
func (p *Partition) release(r *record) bool {
	if r.count >= p.cfg.DeliveryLimit {
		*r = record{state: Archived, count: r.count}
		return false
	}
	*r = record{state: Available, count: r.count}
	return true
}

// ExpireLocks releases the records whose acquisition lock ended at or
// before now and reports how many there were.
func (p *Partition) ExpireLocks(now time.Time) int {
	n := 0
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Acquired && !r.deadline.After(now) {
			p.release(r)
			n++
		}
	}
	if n > 0 {
		p.advance()
	}
	return n
}

// NextDeadline is the earliest acquisition lock's end (false: none).
func (p *Partition) NextDeadline() (time.Time, bool) {
	var t time.Time
	ok := false
	for i := range p.recs {
		if r := p.recs[i]; r.state == Acquired && (!ok || r.deadline.Before(t)) {
			t, ok = r.deadline, true
		}
	}
	return t, ok
}

// ReleaseMember releases every record member holds (it left, was
// fenced, or closed its share session) and reports how many.
func (p *Partition) ReleaseMember(member string) int {
	n := 0
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Acquired && r.member == member {
			p.release(r)
			n++
		}
	}
	if n > 0 {
		p.advance()
	}
	return n
}

// MoveStart moves the SPSO forward to off (the log start moved past it,
// or AlterShareGroupOffsets): offsets below it are dropped from the
// window, offsets past the window start a new empty window.
func (p *Partition) MoveStart(off int64) {
	switch {
	case off <= p.start:
		return
	case off >= p.End():
		p.recs = p.recs[:0]
	default:
		p.recs = append(p.recs[:0], p.recs[off-p.start:]...)
	}
	p.start = off
	p.advance()
}

// Truncate cuts the window at end (the log was truncated there): a SPSO
// above it comes down to it and the in-flight state of offsets at or
// past it is dropped, so those offsets, rewritten after the cut, are
// delivered as new records. It reports whether anything changed.
func (p *Partition) Truncate(end int64) bool {
	switch {
	case p.start > end:
		p.start, p.recs = end, p.recs[:0]
	case p.End() > end:
		p.recs = p.recs[:end-p.start]
	default:
		return false
	}
	return true
}

// Reset puts the SPSO at off with an empty window, forward or back
// (AlterShareGroupOffsets on a group with no members).
func (p *Partition) Reset(off int64) {
	p.start, p.recs = off, p.recs[:0]
}

// advance moves the SPSO past leading ACKNOWLEDGED and ARCHIVED records.
func (p *Partition) advance() {
	i := 0
	for i < len(p.recs) && (p.recs[i].state == Acknowledged || p.recs[i].state == Archived) {
		i++
	}
	if i == 0 {
		return
	}
	p.start += int64(i)
	p.recs = append(p.recs[:0], p.recs[i:]...)
}

// StateBatch is a run of offsets with one state and delivery count, as
// Kafka's share coordinator stores them (ShareSnapshot's StateBatches).
type StateBatch struct {
	First, Last int64
	State       State
	Count       int16
}

// Snapshot is the durable form of a partition: the SPSO and the window's
// runs. An ACQUIRED record is stored AVAILABLE with its delivery count:
// after a restart its lock is gone and it is delivered again.
type Snapshot struct {
	Start   int64
	Batches []StateBatch
}

// Snapshot returns the partition's durable form.
func (p *Partition) Snapshot() Snapshot {
	s := Snapshot{Start: p.start}
	for i, r := range p.recs {
		off := p.start + int64(i)
		st := r.state
		if st == Acquired {
			st = Available
		}
		if k := len(s.Batches); k > 0 && s.Batches[k-1].Last == off-1 && s.Batches[k-1].State == st && s.Batches[k-1].Count == r.count {
			s.Batches[k-1].Last = off
			continue
		}
		s.Batches = append(s.Batches, StateBatch{First: off, Last: off, State: st, Count: r.count})
	}
	return s
}

// Restore builds a partition from its durable form.
func Restore(cfg Config, s Snapshot) *Partition {
	p := &Partition{cfg: cfg, start: s.Start}
	for _, b := range s.Batches {
		if b.Last < p.End() || b.First > b.Last {
			continue
		}
		for p.End() < b.First {
			p.recs = append(p.recs, record{state: Available})
		}
		st := b.State
		if st == Acquired {
			st = Available
		}
		for off := max64(b.First, p.End()); off <= b.Last; off++ {
			p.recs = append(p.recs, record{state: st, count: b.Count})
		}
	}
	p.advance()
	return p
}
