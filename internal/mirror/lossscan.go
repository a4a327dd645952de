package mirror

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/partition"
)

// lossScan reads the batches a failover now would lose, in offset order:
// first the local ones STOPPING would cut (local LSO to log end), then the
// source's the mirror has not fetched (local log end to the source's high
// watermark). It classifies their records by what became of them at the
// source: committed (or not transactional), aborted, still open; and
// keeps the batch timestamps of the committed ones.
type lossScan struct {
	next     int64 // first offset not scanned yet
	lost     int64 // data records, committed or not transactional
	aborted  int64
	controls int64
	pending  map[int64]pendingTxn // producer id → its open transaction's records
	oldestTS int64                // -1: none
	newestTS int64
	tsType   string
	// local is set while the local log is scanned. What is counted lost
	// then (not transactional, or its transaction ended in the local log)
	// is still in the log at the failover: abort-open-transactions keeps
	// it (keptByAbort); lostPastLocal and its timestamps count the rest,
	// what that mode loses.
	local                      bool
	keptByAbort, lostPastLocal int64
	pastOldestTS, pastNewestTS int64 // -1: none
}

type pendingTxn struct {
	records  int64
	oldestTS int64
	newestTS int64
}

func newLossScan(from int64) *lossScan {
	return &lossScan{next: from, pending: map[int64]pendingTxn{}, oldestTS: -1, newestTS: -1, pastOldestTS: -1, pastNewestTS: -1}
}

// batchTimes is the oldest and newest record timestamp of a batch from
// its header alone (compressed batches are not opened): with CreateTime
// the first record's (the batch's base timestamp) and the batch's max
// timestamp, both set by the producer; with LogAppendTime every record
// has the batch's max timestamp, the broker's clock at the append.
func batchTimes(h *batch.Header) (oldest, newest int64, kind string) {
	if h.LogAppendTimeType() {
		return h.MaxTimestamp, h.MaxTimestamp, "LogAppendTime"
	}
	return h.BaseTimestamp, h.MaxTimestamp, "CreateTime"
}

func (s *lossScan) addLost(n, oldest, newest int64) {
	if s.local {
		s.keptByAbort += n
	} else if n > 0 {
		s.lostPastLocal += n
		if s.pastOldestTS < 0 || oldest < s.pastOldestTS {
			s.pastOldestTS = oldest
		}
		s.pastNewestTS = max(s.pastNewestTS, newest)
	}
	s.lost += n
	if n > 0 && (s.oldestTS < 0 || oldest < s.oldestTS) {
		s.oldestTS = oldest
	}
	if n > 0 && newest > s.newestTS {
		s.newestTS = newest
	}
}

// feed scans raw batches, skipping those before s.next (a fetch answers
// from the start of the batch holding the offset asked) and stopping at
// limit; it returns false when nothing new was scanned.
func (s *lossScan) feed(raw []byte, limit int64) bool {
	it := batch.NewIter(raw)
	progressed := false
	for {
		b, h, ok := it.Next()
		if !ok || h.BaseOffset >= limit {
			return progressed
		}
		if h.LastOffset() < s.next {
			continue
		}
		s.next = h.LastOffset() + 1
		progressed = true
		oldest, newest, kind := batchTimes(&h)
		if s.tsType == "" && !h.IsControl() {
			s.tsType = kind
		} else if s.tsType != kind && !h.IsControl() {
			s.tsType = "mixed"
		}
		n := int64(h.NumRecords)
		switch {
		case h.IsControl():
			s.controls += n
			c, err := batch.ReadControl(b)
			if err != nil || (c.Type != batch.ControlCommit && c.Type != batch.ControlAbort) {
				continue
			}
			t, ok := s.pending[h.ProducerID]
			if !ok {
				continue
			}
			delete(s.pending, h.ProducerID)
			if c.Type == batch.ControlCommit {
				s.addLost(t.records, t.oldestTS, t.newestTS)
			} else {
				s.aborted += t.records
			}
		case h.IsTransactional():
			t, ok := s.pending[h.ProducerID]
			if !ok {
				t.oldestTS = oldest
			}
			t.records += n
			t.oldestTS, t.newestTS = min(t.oldestTS, oldest), max(t.newestTS, newest)
			s.pending[h.ProducerID] = t
		default:
			s.addLost(n, oldest, newest)
		}
	}
}

// open is the records and transactions still open at the end of the scan.
func (s *lossScan) open() (records int64, txns int) {
	for _, t := range s.pending {
		records += t.records
	}
	return records, len(s.pending)
}

// scanMaxBytes bounds how much of a partition a plan reads (locally and
// from the source); past it the counts are those of the part read.
const scanMaxBytes = 32 << 20

// scanLocal feeds the local batches from..to.
func (s *lossScan) scanLocal(p *partition.Partition, to int64) error {
	s.local = true
	defer func() { s.local = false }()
	read := 0
	for s.next < to && read < scanMaxBytes {
		raw, err := p.ReadRaw(s.next, to, 1<<20)
		if err != nil {
			return err
		}
		read += len(raw)
		if !s.feed(raw, to) {
			return nil
		}
	}
	return nil
}

// scanSource fetches (read_uncommitted) from the source's leader, from
// s.next up to the source's high watermark, and returns that watermark
// and the LSO of the last answer.
func (s *lossScan) scanSource(ctx context.Context, src *source, topic string, idx int32) (hw, lso int64, err error) {
	info, err := src.describeTopic(ctx, topic)
	if err != nil {
		return -1, -1, err
	}
	leader, ok := info.Partitions[idx]
	if !ok || leader < 0 {
		return -1, -1, fmt.Errorf("source has no leader for %s-%d", topic, idx)
	}
	hw, lso = -1, -1
	read := 0
	for read < scanMaxBytes {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxBytes = 8 << 20
		req.IsolationLevel = 0 // everything up to the HW: open transactions too
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, info.ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = idx, s.next, 4<<20
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := src.cl.Broker(int(leader)).Request(ctx, req)
		if err != nil {
			return hw, lso, err
		}
		resp := kresp.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return hw, lso, err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return hw, lso, errors.New("source fetch: malformed response")
		}
		rp2 := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(rp2.ErrorCode); err != nil {
			return hw, lso, err
		}
		hw, lso = rp2.HighWatermark, rp2.LastStableOffset
		read += len(rp2.RecordBatches)
		if s.next >= hw || !s.feed(rp2.RecordBatches, hw) {
			return hw, lso, nil
		}
	}
	return hw, lso, nil
}
