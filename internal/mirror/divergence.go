package mirror

import (
	"context"
	"fmt"

	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/partition"
)

// askEpoch is the source's answer to OffsetForLeaderEpoch for one epoch.
type askEpoch func(epoch int32) (srcEpoch int32, srcEnd int64, err error)

// divergenceCut is where the local log diverges from the source: the
// offset PREPARING truncates to (the log end when nothing diverges). It
// follows a Kafka follower's OffsetForLeaderEpoch search: ask the source
// where our latest epoch ends there, cut at the smaller of that and our
// own end of the epoch the source answered with, and repeat on the
// shortened log until they agree.
//
// A source that does not know our epoch at all (it answers UNDEFINED: the
// epoch is above every epoch it has, as the epoch of our own barrier and
// writes after a failover is) says nothing about the records before that
// epoch. So we ask again for our previous epoch, walking back until the
// source knows one, and cut where that common epoch ends; only when the
// source knows none of our epochs is nothing in common (noWalkBack, a
// test-only negative control, stops at the first UNDEFINED).
//
// It only reads v and asks the source: PREPARING (fetcher.prepare), the
// plan's failback section and any dry run of `mirror start` share it, so
// what they report is what PREPARING does.
//
// v is the local log's epoch view (partition.EpochView); each step asks
// it, as truncated so far, where an epoch ends (the log's own
// EndOffsetForEpoch rule) and what a truncation would leave.
func divergenceCut(v mlog.EpochView, ask askEpoch, noWalkBack bool) (int64, error) {
	for i := 0; i < 64; i++ {
		if v.Empty() {
			return v.End(), nil // empty log: nothing can diverge
		}
		asked, srcEpoch, srcEnd, err := commonEpoch(v, ask, noWalkBack)
		if err != nil {
			return v.End(), err
		}
		var cut int64
		switch {
		case srcEpoch < 0 || srcEnd < 0:
			// The source knows none of our epochs: nothing in common.
			cut = v.LogStart()
		case srcEpoch == asked:
			_, localEnd := v.EndOffsetFor(asked)
			cut = min(srcEnd, localEnd, v.End())
		default:
			_, localEnd := v.EndOffsetFor(srcEpoch)
			if localEnd < 0 {
				localEnd = v.LogStart()
			}
			cut = min(srcEnd, localEnd)
		}
		if cut >= v.End() {
			return v.End(), nil
		}
		v = v.TruncatedTo(cut)
	}
	return v.End(), errNoConvergence
}

// commonEpoch asks the source where the view's latest epoch ends,
// walking back through earlier epochs while the source answers that it
// knows none at or below the one asked. It returns the epoch it asked
// last and the source's answer (-1, -1 when the source knows none of
// ours).
func commonEpoch(v mlog.EpochView, ask askEpoch, noWalkBack bool) (asked, srcEpoch int32, srcEnd int64, err error) {
	entries := v.Entries() // not empty: the caller checked
	epoch := entries[len(entries)-1].Epoch
	i := len(entries) - 1
	for {
		srcEpoch, srcEnd, err = ask(epoch)
		if err != nil {
			return epoch, -1, -1, fmt.Errorf("offset for leader epoch %d: %w", epoch, err)
		}
		if srcEpoch >= 0 && srcEnd >= 0 {
			return epoch, srcEpoch, srcEnd, nil
		}
		if noWalkBack {
			return epoch, -1, -1, nil // negative control: nothing in common
		}
		for i >= 0 && entries[i].Epoch >= epoch {
			i--
		}
		if i < 0 {
			return epoch, -1, -1, nil // none of our epochs is known there
		}
		epoch = entries[i].Epoch
	}
}

// Divergence is what starting (or restarting) a mirror of the partition
// from its source would cut from the local log now: PREPARING truncates
// to Cut, so LogEnd-Cut records go.
type Divergence struct {
	LogEnd int64
	Cut    int64
}

// Truncates is how many offsets the start would remove.
func (d Divergence) Truncates() int64 { return d.LogEnd - d.Cut }

// divergenceOf computes p's divergence from the source partition
// topic-idx without changing anything.
func (m *Manager) divergenceOf(ctx context.Context, src *source, topic string, idx int32, p *partition.Partition) (Divergence, error) {
	v := p.EpochView()
	cut, err := divergenceCut(v, func(epoch int32) (int32, int64, error) {
		return src.endOffsetForEpoch(ctx, topic, idx, epoch)
	}, m.knobs.hooks.SkipEpochWalkBack())
	return Divergence{LogEnd: v.End(), Cut: cut}, err
}
