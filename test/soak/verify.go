package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// verification is the end-of-run read against the ledger.
type verification struct {
	lines      []string // facts for the summary
	violations []string
}

func (v *verification) fact(format string, args ...any) {
	v.lines = append(v.lines, fmt.Sprintf(format, args...))
}

func (v *verification) fail(format string, args ...any) {
	if len(v.violations) < 100 {
		v.violations = append(v.violations, fmt.Sprintf(format, args...))
	}
}

// verify waits for every transaction to be decided, reads both topics
// read_committed from offset 0 and checks them against the ledger, then
// checks the group's committed offsets.
func verify(ctx context.Context, addr string, led *ledger, groupEnds map[int32]int64) *verification {
	v := &verification{}
	cl, err := kgo.NewClient(baseOpts(addr)...)
	if err != nil {
		v.fail("verify client: %v", err)
		return v
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// Every transaction ends: aborted by the producers, or by the
	// coordinator at the 20 s transaction timeout.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		hwm, err1 := adm.ListEndOffsets(ctx, topicTxn)
		lso, err2 := adm.ListCommittedOffsets(ctx, topicTxn)
		if err1 == nil && err2 == nil && sameOffsets(hwm, lso, topicTxn) {
			break
		}
		if time.Now().After(deadline) {
			v.fail("%s: last stable offset still below the high watermark 2 min after the load stopped (a transaction never ended): hwm %v lso %v",
				topicTxn, offsetsOf(hwm, topicTxn), offsetsOf(lso, topicTxn))
			break
		}
		time.Sleep(2 * time.Second)
	}

	idem := readAll(ctx, v, addr, adm, topicIdem)
	txn := readAll(ctx, v, addr, adm, topicTxn)

	led.mu.Lock()
	defer led.mu.Unlock()

	// Idempotent producers: acknowledged exactly once, failed at most once.
	var lost, dup, failedPresent, unknownKeys int
	for k := range led.idemAcked {
		switch n := idem[k]; {
		case n == 0:
			lost++
			if lost <= 10 {
				v.fail("%s: acknowledged record %s is missing", topicIdem, k)
			}
		case n > 1:
			dup++
			if dup <= 10 {
				v.fail("%s: acknowledged record %s is present %d times", topicIdem, k, n)
			}
		}
	}
	for k := range led.idemFailed {
		if n := idem[k]; n > 1 {
			dup++
			v.fail("%s: unacknowledged record %s is present %d times", topicIdem, k, n)
		} else if n == 1 {
			failedPresent++
		}
	}
	for k := range idem {
		_, a := led.idemAcked[k]
		_, f := led.idemFailed[k]
		if !a && !f {
			unknownKeys++
		}
	}
	if lost > 0 || dup > 0 {
		v.fail("%s: %d acknowledged records lost, %d duplicated", topicIdem, lost, dup)
	}
	if unknownKeys > 0 {
		v.fail("%s: %d records present that no producer produced", topicIdem, unknownKeys)
	}
	v.fact("idempotent: %d acknowledged, %d failed (%d of those present once); read back %d distinct keys; lost %d, duplicated %d",
		len(led.idemAcked), len(led.idemFailed), failedPresent, len(idem), lost, dup)

	// Transactions: committed exactly once, aborted never, unknown all or none.
	var tLost, tDup, abortedVisible, partial, unknownCommitted int
	for k := range led.txnCommitted {
		switch n := txn[k]; {
		case n == 0:
			tLost++
			if tLost <= 10 {
				v.fail("%s: record %s of a committed transaction is missing", topicTxn, k)
			}
		case n > 1:
			tDup++
			if tDup <= 10 {
				v.fail("%s: record %s of a committed transaction is present %d times", topicTxn, k, n)
			}
		}
	}
	for k := range led.txnAborted {
		if txn[k] > 0 {
			abortedVisible++
			if abortedVisible <= 10 {
				v.fail("%s: record %s of an aborted transaction is visible read_committed", topicTxn, k)
			}
		}
		if led.liveTxnSeen[k] > 0 {
			v.fail("%s: the live read_committed consumer saw %s of an aborted transaction", topicTxn, k)
		}
	}
	for id, keys := range led.txnUnknown {
		seen := 0
		for _, k := range keys {
			if txn[k] > 1 {
				tDup++
			}
			if txn[k] > 0 {
				seen++
			}
		}
		if seen != 0 && seen != len(keys) {
			partial++
			v.fail("%s: transaction %s (commit unconfirmed) is partly visible: %d of %d records", topicTxn, id, seen, len(keys))
		}
		if seen == len(keys) {
			unknownCommitted++
		}
	}
	if tLost > 0 || tDup > 0 || abortedVisible > 0 {
		v.fail("%s: %d committed records lost, %d duplicated, %d aborted records visible", topicTxn, tLost, tDup, abortedVisible)
	}
	v.fact("transactions: %v; committed records %d, aborted records %d; read back %d distinct keys read_committed; lost %d, duplicated %d, aborted visible %d, unconfirmed commits visible %d/%d, partly visible %d",
		led.txnOutcomes, len(led.txnCommitted), len(led.txnAborted), len(txn), tLost, tDup, abortedVisible,
		unknownCommitted, len(led.txnUnknown), partial)

	// Group: the last acknowledged commit survived the final kill, and the
	// group had consumed everything.
	fetched, err := adm.FetchOffsets(ctx, groupName)
	if err != nil {
		v.fail("group: fetch offsets: %v", err)
		return v
	}
	nowEnds, err := adm.ListEndOffsets(ctx, topicIdem)
	if err != nil {
		v.fail("group: list end offsets: %v", err)
		return v
	}
	logEnds := offsetsOf(nowEnds, topicIdem)
	var parts []int32
	for p := range groupEnds {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		o, ok := fetched.Lookup(topicIdem, p)
		got := int64(-1)
		if ok {
			got = o.At
		}
		if got != led.commitAcked[p] {
			v.fail("group: partition %d committed offset %d after the final restart, last acknowledged commit %d", p, got, led.commitAcked[p])
		}
		if got > logEnds[p] {
			v.fail("group: partition %d committed offset %d is beyond the log end %d after the final restart", p, got, logEnds[p])
		}
		if got != groupEnds[p] {
			v.fail("group: partition %d committed offset %d, log end %d: the group did not catch up", p, got, groupEnds[p])
		}
	}
	v.fact("group: committed offsets after the final restart %v, log ends before it %v, after it %v", offsetsByPartition(fetched, topicIdem), groupEnds, logEnds)
	return v
}

// readAll reads every partition of topic read_committed from offset 0 up
// to the last stable offset and counts each key.
func readAll(ctx context.Context, v *verification, addr string, adm *kadm.Client, topic string) map[string]int {
	counts := map[string]int{}
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		v.fail("%s: list offsets: %v", topic, err)
		return counts
	}
	start := map[int32]kgo.Offset{}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		start[o.Partition] = kgo.NewOffset().At(0)
		want[o.Partition] = o.Offset
	})
	cl, err := kgo.NewClient(append(baseOpts(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(300*time.Millisecond))...)
	if err != nil {
		v.fail("%s: reader: %v", topic, err)
		return counts
	}
	defer cl.Close()
	reached := map[int32]int64{}
	total := 0
	lastProgress := time.Now()
	for {
		done := true
		for p, end := range want {
			if reached[p] < end {
				done = false
			}
		}
		if done {
			break
		}
		// Transaction markers and aborted records end a partition without
		// a record at end-1: stop after 15 s without progress.
		if time.Since(lastProgress) > 15*time.Second {
			if topic == topicIdem {
				v.fail("%s: reading stopped short: reached %v, end %v", topic, reached, want)
			}
			break
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			counts[string(r.Key)]++
			total++
			reached[r.Partition] = r.Offset + 1
			lastProgress = time.Now()
		})
	}
	v.fact("%s: read %d records read_committed up to %v", topic, total, want)
	return counts
}

func sameOffsets(a, b kadm.ListedOffsets, topic string) bool {
	oa, ob := offsetsOf(a, topic), offsetsOf(b, topic)
	if len(oa) == 0 || len(oa) != len(ob) {
		return false
	}
	for p, o := range oa {
		if ob[p] != o {
			return false
		}
	}
	return true
}

func offsetsOf(l kadm.ListedOffsets, topic string) map[int32]int64 {
	out := map[int32]int64{}
	l.Each(func(o kadm.ListedOffset) {
		if o.Topic == topic && o.Err == nil {
			out[o.Partition] = o.Offset
		}
	})
	return out
}

func offsetsByPartition(r kadm.OffsetResponses, topic string) map[int32]int64 {
	out := map[int32]int64{}
	r.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			out[o.Partition] = o.At
		}
	})
	return out
}
