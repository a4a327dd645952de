package share

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

type sessionKey struct{ group, member string }

// Session is a share session (KIP-932's ShareSession): the partitions a
// member fetches, and the epoch its next request must carry.
type Session struct {
	Epoch int32
	Parts map[TP]bool
	// conn is the connection that opened the session (epoch 0), nil
	// when unknown: the session ends when it closes (ConnClosed).
	conn any
}

// BindSession ties member's share session to the connection that opened
// it (Kafka's ShareSessionCache keeps the connection id of the session's
// creating request). It reports whether conn is new to the coordinator:
// the caller then arranges for ConnClosed when the connection ends.
func (c *Coordinator) BindSession(group, member string, conn any) (watch bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[sessionKey{group, member}]
	if s == nil || conn == nil {
		return false
	}
	s.conn = conn
	if c.conns == nil {
		c.conns = map[any]bool{}
	}
	if c.conns[conn] {
		return false
	}
	c.conns[conn] = true
	return true
}

// ConnClosed ends the share sessions opened on conn and releases what
// their members hold on the sessions' partitions, as Kafka's
// SharePartitionManager does when a connection closes: the records are
// delivered again at once instead of when their acquisition locks end.
func (c *Coordinator) ConnClosed(conn any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.conns, conn)
	if c.opt.private.hooks.NoConnRelease {
		return
	}
	n := 0
	for k, s := range c.sessions {
		if s.conn != conn {
			continue
		}
		delete(c.sessions, k)
		n += c.releaseSessionLocked(k, s)
	}
	if n > 0 {
		c.signalLocked()
	}
}

// releaseSessionLocked releases what k's member holds on s's partitions.
func (c *Coordinator) releaseSessionLocked(k sessionKey, s *Session) int {
	g := c.groups[k.group]
	if g == nil {
		return 0
	}
	n := 0
	for tp := range s.Parts {
		if p := g.parts[tp]; p != nil {
			if r := p.ReleaseMember(k.member); r > 0 {
				n += r
				_ = c.persistLocked(k.group, tp, p)
			}
		}
	}
	return n
}

// UpdateSession applies a ShareFetch's session part: epoch 0 opens a new
// session with add (acknowledgements are refused there), a positive epoch
// must be the session's and adds add and drops forget. It returns the
// session's partitions, sorted.
func (c *Coordinator) UpdateSession(group, member string, epoch int32, add, forget []TP, hasAcks bool) ([]TP, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := sessionKey{group, member}
	s := c.sessions[k]
	switch {
	case epoch == 0:
		if hasAcks {
			return nil, kerr.InvalidRequest
		}
		s = &Session{Parts: map[TP]bool{}}
		c.sessions[k] = s
	case s == nil:
		return nil, kerr.ShareSessionNotFound
	case epoch != s.Epoch:
		return nil, kerr.InvalidShareSessionEpoch
	}
	for _, tp := range add {
		s.Parts[tp] = true
	}
	for _, tp := range forget {
		delete(s.Parts, tp)
	}
	s.Epoch = epoch + 1
	if s.Epoch <= 0 {
		s.Epoch = 1
	}
	return sortedTPs(s.Parts), nil
}

// CheckSession is a ShareAcknowledge's session check: epoch 0 is
// refused, -1 (closing) and the session's epoch are accepted (the epoch
// moves on).
func (c *Coordinator) CheckSession(group, member string, epoch int32) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[sessionKey{group, member}]
	switch {
	case epoch == 0:
		return kerr.InvalidShareSessionEpoch
	case s == nil:
		return kerr.ShareSessionNotFound
	case epoch == -1:
		return nil
	case epoch != s.Epoch:
		return kerr.InvalidShareSessionEpoch
	}
	s.Epoch++
	return nil
}

// CloseSession ends member's share session (epoch -1) and releases what
// it holds on the session's partitions.
func (c *Coordinator) CloseSession(group, member string) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := sessionKey{group, member}
	s := c.sessions[k]
	if s == nil {
		return kerr.ShareSessionNotFound
	}
	delete(c.sessions, k)
	if c.releaseSessionLocked(k, s) > 0 {
		c.signalLocked()
	}
	return nil
}

func sortedTPs(m map[TP]bool) []TP {
	out := make([]TP, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return string(out[i].Topic[:]) < string(out[j].Topic[:])
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// LogView is what the broker knows of a partition's log when it fetches.
type LogView struct {
	LogStart int64
	// Initial is where a new share partition starts
	// (share.auto.offset.reset: the log start or the high watermark).
	Initial int64
	// InitialFn, when set, computes Initial instead, and only when the
	// share partition is new (share.auto.offset.reset by_duration looks
	// the offset up by timestamp).
	InitialFn func() int64
	// Limit is the high watermark, or the last stable offset under
	// read_committed.
	Limit int64
}

// Prepare gets (or starts) group's share partition tp with cfg, moves its
// SPSO to the log start if the log lost records below it, and returns
// where to read from and whether anything can be acquired.
func (c *Coordinator) Prepare(group string, tp TP, cfg Config, lv LogView) (from int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.getOrCreate(group)
	p := g.parts[tp]
	if p == nil {
		initial := lv.Initial
		if lv.InitialFn != nil {
			initial = lv.InitialFn()
		}
		// Stored before a record is acquired: a restart must find the
		// start offset share.auto.offset.reset chose, or records acquired
		// and not acknowledged would be skipped by a later choice
		// (latest). Not stored, nothing is acquired.
		p = NewPartition(cfg, initial)
		if c.persistLocked(group, tp, p) != nil {
			return initial, false
		}
		g.parts[tp] = p
	}
	p.SetConfig(cfg)
	if lv.LogStart > p.Start() {
		p.MoveStart(lv.LogStart)
	}
	return p.FetchOffset(), p.CanAcquire(lv.Limit)
}

// Acquire is Partition.Acquire on group's share partition tp. It also
// reports whether records past the batches could still be acquired: the
// window has room, or reaches past them (released records).
func (c *Coordinator) Acquire(group string, tp TP, member string, max int, from, limit int64, batches []Batch) ([]Range, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil || g.parts[tp] == nil {
		return nil, false
	}
	p := g.parts[tp]
	out := p.Acquire(c.opt.Now(), member, max, from, limit, batches)
	next := from
	if len(batches) > 0 {
		next = batches[len(batches)-1].Last + 1
	}
	return out, p.InFlight() < p.cfg.MaxInFlight || next < p.End()
}

// Ack applies member's acknowledgements on tp and stores the partition's
// state before returning: an acknowledgement answered is durable. On a
// store failure nothing is applied.
func (c *Coordinator) Ack(group string, tp TP, member string, batches []AckBatch, renew bool) *kerr.Error {
	if len(batches) == 0 {
		return nil
	}
	if err := ValidateBatches(batches, renew); err != nil {
		return kerr.InvalidRequest
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil || g.parts[tp] == nil {
		return kerr.InvalidRecordState
	}
	p := g.parts[tp]
	undo := p.ackUndo(batches[len(batches)-1].Last)
	full, start := p.InFlight() >= p.cfg.MaxInFlight, p.Start()
	released, err := p.Ack(c.opt.Now(), member, batches)
	switch err {
	case nil:
	case ErrInvalidRequest:
		return kerr.InvalidRequest
	default:
		return kerr.InvalidRecordState
	}
	if st := c.store(); st != nil {
		if err := st.Save(group, tp, p.Snapshot()); err != nil {
			undo()
			return kerr.KafkaStorageError
		}
	}
	// A fetch waiting on this partition is woken when records became
	// AVAILABLE or the SPSO moved and made room in a full window: Kafka
	// completes its delayed share fetches after an acknowledgement. A
	// waiter left asleep here waits out its MaxWait (kgo: 5 s, 500 ms
	// when it carries acknowledgements) with records to give it.
	if released || (full && p.Start() > start) {
		c.signalLocked()
	}
	return nil
}

// ackUndo returns what puts the window back as it is now after an Ack
// whose batches end at last: an Ack changes only records up to last and
// then drops a prefix of the window, which ends before the first record
// past last that is not finished. Only that head is copied, not the
// whole window (up to group.share.partition.max.record.locks records,
// copied on every acknowledgement otherwise).
func (p *Partition) ackUndo(last int64) func() {
	k := int(min(max(last-p.start+1, 0), int64(len(p.recs))))
	for k < len(p.recs) && (p.recs[k].state == Acknowledged || p.recs[k].state == Archived) {
		k++
	}
	head, start := append([]record(nil), p.recs[:k]...), p.start
	return func() {
		dropped := int(p.start - start)
		p.recs = append(head, p.recs[k-dropped:]...)
		p.start = start
	}
}

// persistLocked stores a share partition's state after a change Kafka's
// SharePartition writes without an acknowledgement waiting on it
// (records released, acquisition locks expired): the change stands even
// when the write fails, as Kafka's does; a later write carries it.
func (c *Coordinator) persistLocked(group string, tp TP, p *Partition) error {
	if st := c.store(); st != nil {
		return st.Save(group, tp, p.Snapshot())
	}
	return nil
}

func (p *Partition) clone() *Partition {
	q := *p
	q.recs = append([]record(nil), p.recs...)
	return &q
}
