package mirror

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/partition"
)

// PartitionTruncation is what aligning a partition's local log with the
// source removes (PREPARING's divergence truncation): computed by
// `mirror start` before it changes anything (its report, and the dry run),
// and recorded when PREPARING truncates.
type PartitionTruncation struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// State is the partition's mirror state before the start ("" when
	// the mirror has no record of it).
	State         State `json:"state,omitempty"`
	LocalLogStart int64 `json:"local_log_start_offset"`
	LocalLogEnd   int64 `json:"local_log_end_offset"`
	// TruncateTo is where the log would end (LocalLogEnd when nothing is
	// cut); Offsets = LocalLogEnd - TruncateTo.
	TruncateTo int64 `json:"truncate_to"`
	Offsets    int64 `json:"offsets"`
	// Records are the data records removed (in batches that are not
	// control batches), Markers the transaction markers, Barriers the
	// MIRROR_PID_RESET barriers (which no consumer reads).
	Records  int64 `json:"records"`
	Markers  int64 `json:"markers"`
	Barriers int64 `json:"barriers"`
}

// losesData reports whether the truncation removes anything but
// barriers: that is what `mirror start` refuses without --allow-truncate.
func (t PartitionTruncation) losesData() bool { return t.Records > 0 || t.Markers > 0 }

// truncationOf counts what cutting p's log at cut removes. The log cuts
// whole batches (the one holding cut goes), so TruncateTo is the base of
// the first batch removed.
func truncationOf(k tp, p *partition.Partition, cut int64) (PartitionTruncation, error) {
	o := p.Offsets()
	t := PartitionTruncation{Topic: k.topic, Partition: k.partition, LocalLogStart: o.LogStart,
		LocalLogEnd: o.LogEnd, TruncateTo: o.LogEnd}
	if cut >= o.LogEnd {
		return t, nil
	}
	t.TruncateTo = max(cut, o.LogStart)
	for off, first := max(cut, o.LogStart), true; off < o.LogEnd; {
		raw, err := p.ReadRaw(off, o.LogEnd, 1<<20)
		if err != nil {
			return t, fmt.Errorf("reading %s-%d at %d: %w", k.topic, k.partition, off, err)
		}
		it := batch.NewIter(raw)
		progressed := false
		for b, h, ok := it.Next(); ok; b, h, ok = it.Next() {
			if first {
				t.TruncateTo, first = min(t.TruncateTo, max(h.BaseOffset, o.LogStart)), false
			}
			switch {
			case !h.IsControl():
				t.Records += int64(h.NumRecords)
			case batch.IsBarrier(&h, b):
				t.Barriers += int64(h.NumRecords)
			default:
				t.Markers += int64(h.NumRecords)
			}
			off, progressed = h.LastOffset()+1, true
		}
		if err := it.Err(); err != nil {
			return t, fmt.Errorf("reading %s-%d at %d: %w", k.topic, k.partition, off, err)
		}
		if !progressed {
			break
		}
	}
	t.Offsets = t.LocalLogEnd - t.TruncateTo
	return t, nil
}

// truncateRefusedError is PREPARING refusing to cut local data the start
// did not allow it to: not retried.
type truncateRefusedError struct{ msg string }

func (e *truncateRefusedError) Error() string { return e.msg }

func isTruncateRefused(err error) bool {
	var te *truncateRefusedError
	return errors.As(err, &te)
}

// prepare aligns the local log with the source before fetching: it cuts
// the log where it diverges (divergenceCut). Removing data (anything but
// barriers) needs the start's permission (`--allow-truncate`), recorded as
// the partition's approval of exactly that cut; without it, or when the
// log changed since the start's report, the partition goes FAILED and
// nothing is cut. The source topic's id is checked again after the
// divergence was computed and before the cut: OffsetForLeaderEpoch asks by
// name, so a topic recreated meanwhile must not decide a truncation.
func (f *fetcher) prepare(src *source) error {
	d, err := f.m.divergenceOf(f.ctx, src, f.k.topic, f.k.partition, f.p)
	if err != nil || d.Cut >= d.LogEnd {
		return err
	}
	tr, err := truncationOf(f.k, f.p, d.Cut)
	if err != nil {
		return err
	}
	if err := f.checkSourceTopic(src); err != nil {
		return err
	}
	if tr.losesData() && !f.m.knobs.hooks.SkipTruncateGuard() {
		f.rt.mu.Lock()
		approval := f.rt.spec.Topics[f.k.topic].Partitions[f.k.partition].AllowTruncate
		f.rt.mu.Unlock()
		if approval == nil || tr.TruncateTo < approval.TruncateTo || tr.LocalLogEnd != approval.LocalLogEnd {
			return &truncateRefusedError{msg: fmt.Sprintf(
				"aligning %s-%d with the source would remove %d records, %d markers (offsets %d..%d): refused without --allow-truncate%s; nothing was cut",
				f.k.topic, f.k.partition, tr.Records, tr.Markers, tr.TruncateTo, tr.LocalLogEnd-1, approvalNote(approval))}
		}
	}
	f.logger().Warn("truncating to where the log diverges from the source",
		zap.Int64("from", tr.LocalLogEnd), zap.Int64("to", tr.TruncateTo), zap.Int64("records", tr.Records),
		zap.Int64("markers", tr.Markers), zap.Int64("barriers", tr.Barriers))
	if err := f.p.TruncateTo(tr.TruncateTo); err != nil {
		return err
	}
	return f.m.setRecord(f.rt, f.k, func(r *partitionRecord) { r.Truncated = &tr })
}

func approvalNote(a *truncateApproval) string {
	if a == nil {
		return ""
	}
	return fmt.Sprintf(" (the start allowed cutting %d..%d; the log changed since)", a.TruncateTo, a.LocalLogEnd-1)
}

// checkSourceTopic asks the source for the topic again and checks that
// it is still the one mirrored (cluster id, topic id).
func (f *fetcher) checkSourceTopic(src *source) error {
	info, err := src.describeTopic(f.ctx, f.k.topic)
	if err != nil {
		return err
	}
	return f.m.checkIdentity(f.rt, f.k.topic, info)
}
