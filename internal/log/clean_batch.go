package log

import (
	"bufio"
	"container/heap"
	"io"
	"os"

	"github.com/minibroker/minibroker/internal/batch"
)

// cleanPass is one pass's walk over the segments below its end offset,
// group by group, in offset order (Kafka's cleanSegments and cleanInto).
type cleanPass struct {
	c          *Cleaner
	l          *Log
	cfg        Config
	now        int64
	producers  map[int64]ProducerLast
	upperBound int64 // first uncleanable offset of the pass
	txns       *cleanedTxns
	stats      *CleanStats
	// producerKept: a batch with a producer id is kept below the batch
	// being read. The barrier rule reads it.
	producerKept bool
	barrierRule  func(producerKeptBelow bool) bool
	seenAborted  map[AbortedTxn]bool
	recs, kept   []cleanRecord
	out          []byte
}

// Batch retention, Kafka's RecordFilter.BatchRetention.
type batchRetention int8

const (
	deleteEmpty batchRetention = iota // keep the batch only if records are kept
	retainEmpty                       // keep the batch, empty if no record is
	deleteBatch                       // drop the batch whole
)

// groupWriter writes a cleaned group's files (<base>.log.cleaned and its
// indexes) and the index entries its batches need.
type groupWriter struct {
	base            int64
	f               fileWriter
	w               *bufio.Writer
	size            int64
	interval        int64
	bytesSinceIndex int64
	offIdx, timeIdx []byte
	maxTs, maxTsOff int64
	lastTimeTs      int64
	lastPos         int64
	lastOffset      int64
	txns            []AbortedTxn
}

type fileWriter interface {
	io.Writer
	Sync() error
	Close() error
}

// batchOut appends one batch to the cleaned segment and indexes it as an
// append does (segment.indexBatch): an offset entry (and a time entry
// when the max timestamp grew) every log.index.interval.bytes.
func (g *groupWriter) batchOut(b []byte, h *batch.Header) error {
	if g.bytesSinceIndex > g.interval {
		g.offIdx = appendOffsetEntry(g.offIdx, offsetEntry{h.LastOffset(), g.size}, g.base)
		g.timeEntry()
		g.bytesSinceIndex = 0
	}
	if h.MaxTimestamp > g.maxTs {
		g.maxTs, g.maxTsOff = h.MaxTimestamp, h.BaseOffset
	}
	if _, err := g.w.Write(b); err != nil {
		return err
	}
	g.lastPos, g.lastOffset = g.size, h.LastOffset()
	g.size += int64(len(b))
	g.bytesSinceIndex += int64(len(b))
	return nil
}

func (g *groupWriter) timeEntry() {
	if g.maxTs >= 0 && g.maxTs > g.lastTimeTs {
		g.timeIdx = appendTimeEntry(g.timeIdx, timeEntry{g.maxTs, g.maxTsOff}, g.base)
		g.lastTimeTs = g.maxTs
	}
}

// seal gives the offset index its entry for the last batch and the time
// index its final entry, as a roll does (sealIndex, onBecomeInactive).
func (g *groupWriter) seal() {
	if g.lastPos >= 0 {
		n := len(g.offIdx)
		if n == 0 || decodeOffsetEntry(g.offIdx[n-offsetEntrySize:], g.base).Offset < g.lastOffset {
			g.offIdx = appendOffsetEntry(g.offIdx, offsetEntry{g.lastOffset, g.lastPos}, g.base)
		}
	}
	g.timeEntry()
}

// cleanGroup rewrites one group into a new segment and swaps it in.
func (p *cleanPass) cleanGroup(group []segSnap) error {
	l := p.l
	base := group[0].base
	path := segmentFileName(l.dir, base, logSuffix) + cleanedSuffix
	f, err := l.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return storageErr("create", path, err)
	}
	g := &groupWriter{base: base, f: f, w: bufio.NewWriterSize(f, 256<<10), interval: int64(p.cfg.IndexIntervalBytes),
		maxTs: -1, maxTsOff: -1, lastTimeTs: -1, lastPos: -1}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			l.removeCleanFiles(base)
		}
	}()
	for i, s := range group {
		upper := s.next
		if i+1 < len(group) {
			upper = group[i+1].base
		}
		for _, t := range l.AbortedTxns(s.base, upper) {
			if !p.seenAborted[t] {
				p.seenAborted[t] = true
				heap.Push(&p.txns.aborted, t)
			}
		}
		p.txns.kept = p.txns.kept[:0]
		lastOfGroup := i == len(group)-1
		if err := p.cleanSegment(s, g, lastOfGroup); err != nil {
			if !l.groupIntact(group) {
				return errCleanAborted // a truncation or retention took the segment while it was read
			}
			return err
		}
		g.txns = append(g.txns, p.txns.kept...)
	}
	g.seal()
	if err := g.w.Flush(); err != nil {
		return storageErr("write", path, err)
	}
	if l.opts.private.cleanSkipSync {
	} else if err := f.Sync(); err != nil {
		return storageErr("fsync", path, err)
	}
	if err := f.Close(); err != nil {
		return storageErr("close", path, err)
	}
	ok = true
	p.stats.GroupsWritten++
	if err := l.swapIn(group, g); err != nil {
		return err
	}
	p.stats.SegmentsReplaced += len(group)
	return nil
}

// cleanSegment filters one segment's batches into g.
func (p *cleanPass) cleanSegment(s segSnap, g *groupWriter, lastOfGroup bool) error {
	sc := newScanner(s.seg.log, s.seg.logPath, 0, s.size, recoveryReadahead)
	defer sc.release()
	// The last batch of a group is always kept (empty if need be): the
	// cleaned segment then ends where the group did, which lets recovery
	// of an interrupted swap know which old segments it replaces.
	var pendingRaw []byte
	var pendingH batch.Header
	flush := func(last bool) error {
		if pendingRaw == nil {
			return nil
		}
		return p.cleanBatch(pendingRaw, &pendingH, g, last)
	}
	for {
		h, raw, _, err := sc.next(true)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		p.c.throttle.wait(int64(h.Size()))
		if err := flush(false); err != nil {
			return err
		}
		pendingRaw, pendingH = append(pendingRaw[:0], raw...), h
	}
	return flush(lastOfGroup)
}

// cleanBatch decides one batch (Kafka's checkBatchRetention and
// shouldRetainRecord) and writes what is kept.
func (p *cleanPass) cleanBatch(raw []byte, h *batch.Header, g *groupWriter, lastOfGroup bool) error {
	st := p.stats
	st.BytesRead += int64(len(raw))
	st.MessagesRead += int64(h.NumRecords)
	section, err := records(raw, h)
	if err != nil {
		return err
	}
	if p.recs, err = parseRecords(section, h, p.recs[:0]); err != nil {
		return err
	}
	horizonSet := h.Attributes&attrDeleteHorizon != 0
	horizonPassed := horizonSet && h.BaseTimestamp <= p.now
	var canDiscard, discard, markerDiscardable bool
	if h.IsControl() {
		if batch.IsBarrier(h, raw) {
			canDiscard = p.barrierRule != nil && p.barrierRule(p.producerKept)
		} else {
			var typ batch.ControlType
			known := len(p.recs) > 0
			if known {
				_, typ, known = batch.ControlKey(p.recs[0].key)
			}
			canDiscard = p.txns.onControl(h, typ, known)
		}
		discard = canDiscard && horizonPassed
		markerDiscardable = canDiscard
	} else {
		canDiscard = p.txns.onData(h)
		discard = canDiscard
	}
	retention := deleteEmpty
	switch {
	case h.HasProducer() && p.lastOfProducer(h):
		retention = retainEmpty
	case h.LastOffset()+1 == p.upperBound || lastOfGroup:
		retention = retainEmpty
	case discard:
		retention = deleteBatch
	}
	if retention == deleteBatch {
		return nil
	}
	if h.IsControl() && retention == retainEmpty {
		// Deviation: Kafka may keep such a batch emptied; a replay
		// ignores an empty control batch, so the producer state rebuilt
		// from it would lose the marker's epoch and coordinator epoch.
		// minibroker keeps the marker's one record instead.
		discard = false
	}
	kept := p.kept[:0]
	tombstones := false
	if !discard {
		for _, r := range p.recs {
			if h.IsControl() || p.retainRecord(h, &r, horizonSet) {
				kept = append(kept, r)
				tombstones = tombstones || (!h.IsControl() && r.tombstone)
			}
		}
	}
	p.kept = kept
	if len(kept) == 0 && retention == deleteEmpty {
		return nil
	}
	needHorizon := (tombstones || markerDiscardable) && !horizonSet
	out := raw
	if len(kept) != len(p.recs) || needHorizon {
		horizon := int64(-1)
		if needHorizon {
			horizon = p.now + p.cfg.DeleteRetentionMs
		}
		if p.out, err = rebuildBatch(p.out[:0], h, kept, horizon); err != nil {
			return err
		}
		out = p.out
	}
	if h.HasProducer() {
		p.producerKept = true
	}
	st.BytesWritten += int64(len(out))
	st.MessagesWritten += int64(len(kept))
	return g.batchOut(out, h)
}

// lastOfProducer is Kafka's isBatchLastRecordOfProducer.
func (p *cleanPass) lastOfProducer(h *batch.Header) bool {
	last, ok := p.producers[h.ProducerID]
	if !ok {
		return false
	}
	if last.LastDataOffset >= 0 {
		return h.LastOffset() == last.LastDataOffset
	}
	return h.IsControl() && h.ProducerEpoch == last.Epoch
}

// retainRecord is Kafka's shouldRetainRecord for a data record.
func (p *cleanPass) retainRecord(h *batch.Header, r *cleanRecord, horizonSet bool) bool {
	off := h.BaseOffset + int64(r.offsetDelta)
	if off > p.c.m.latest {
		return true
	}
	if !r.hasKey {
		return false // Kafka counts it invalid and drops it
	}
	if off < p.c.m.get(r.key) {
		return false
	}
	if !r.tombstone {
		return true
	}
	return !horizonSet || p.now < h.BaseTimestamp
}
