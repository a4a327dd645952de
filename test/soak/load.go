package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// padding makes each record ~150 bytes.
var padding = strings.Repeat("x", 120)

func baseOpts(addr string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.RetryBackoffFn(func(tries int) time.Duration {
			return min(time.Duration(tries)*100*time.Millisecond, time.Second)
		}),
		kgo.RequestTimeoutOverhead(10 * time.Second),
	}
}

// idempotentProducer produces rate records/s with acks=all and the
// idempotent producer on, recording each record's outcome. On stop it
// flushes what it buffered before returning.
func idempotentProducer(ctx context.Context, addr, name string, rate int, led *ledger) {
	cl, err := kgo.NewClient(append(baseOpts(addr), kgo.DefaultProduceTopic(topicIdem),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordDeliveryTimeout(2*time.Minute), kgo.MaxBufferedRecords(20000))...)
	if err != nil {
		led.violation("%s: client: %v", name, err)
		return
	}
	defer cl.Close()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	perTick := max(1, rate/10)
	seq := 0
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			for range perTick {
				key := fmt.Sprintf("%s-%d", name, seq)
				seq++
				led.idemProduced.Add(1)
				cl.Produce(context.Background(), &kgo.Record{Key: []byte(key), Value: []byte(key + padding)},
					func(_ *kgo.Record, err error) { led.idemResult(key, err) })
			}
		}
	}
	flushCtx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := cl.Flush(flushCtx); err != nil {
		led.violation("%s: flush at the end: %v", name, err)
	}
}

// plainConsumer reads topicIdem from the start without a group and checks
// that each partition's offsets are contiguous from 0: the topic has no
// transactions, so a gap or a step back is lost or rewound data.
func plainConsumer(ctx context.Context, addr, name string, led *ledger) {
	cl, err := kgo.NewClient(append(baseOpts(addr), kgo.ConsumeTopics(topicIdem),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		led.violation("%s: client: %v", name, err)
		return
	}
	defer cl.Close()
	next := map[int32]int64{}
	pollRecords(ctx, cl, name, led, func(r *kgo.Record) {
		led.plainConsumed.Add(1)
		if want := next[r.Partition]; r.Offset != want {
			led.violation("%s: %s/%d: offset %d after %d (want %d)", name, r.Topic, r.Partition, r.Offset, want-1, want)
		}
		next[r.Partition] = r.Offset + 1
	})
}

// pollRecords polls cl until ctx ends, noting fetch errors other than the
// context's own and handing every record to each.
func pollRecords(ctx context.Context, cl *kgo.Client, name string, led *ledger, each func(*kgo.Record)) {
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				led.note(name+" fetch", err)
			}
		})
		fs.EachRecord(each)
	}
}

// committedReader reads topicTxn read_committed without a group and
// records the keys it saw: none may belong to an aborted transaction.
// Offsets must only increase.
func committedReader(ctx context.Context, addr, name string, led *ledger) {
	cl, err := kgo.NewClient(append(baseOpts(addr), kgo.ConsumeTopics(topicTxn),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		led.violation("%s: client: %v", name, err)
		return
	}
	defer cl.Close()
	last := map[int32]int64{}
	pollRecords(ctx, cl, name, led, func(r *kgo.Record) {
		led.liveTxnRead.Add(1)
		if prev, ok := last[r.Partition]; ok && r.Offset <= prev {
			led.violation("%s: %s/%d: offset %d after %d", name, r.Topic, r.Partition, r.Offset, prev)
		}
		last[r.Partition] = r.Offset
		led.liveTxnRecord(string(r.Key))
	})
}

// transactionalProducer runs transactions of 5–20 records spread over the
// partitions, committing about 70 % and aborting the rest. A commit whose
// outcome is unconfirmed is "unknown": all or none of its records may be
// visible. Any error recreates the client with the same transactional id,
// which fences whatever the old one left open.
func transactionalProducer(ctx context.Context, addr, name string, led *ledger) {
	var cl *kgo.Client
	newClient := func() {
		var err error
		cl, err = kgo.NewClient(append(baseOpts(addr), kgo.DefaultProduceTopic(topicTxn),
			kgo.TransactionalID(name), kgo.TransactionTimeout(20*time.Second),
			kgo.ProducerLinger(2*time.Millisecond), kgo.RecordDeliveryTimeout(90*time.Second))...)
		if err != nil {
			led.violation("%s: client: %v", name, err)
		}
	}
	drop := func() {
		if cl != nil {
			cl.Close()
			cl = nil
		}
	}
	defer drop()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for txn := 0; ctx.Err() == nil; txn++ {
		if cl == nil {
			newClient()
			if cl == nil {
				return
			}
		}
		txnID := fmt.Sprintf("%s-%d", name, txn)
		if err := cl.BeginTransaction(); err != nil {
			led.note(name+" begin", err)
			drop()
			continue
		}
		n := 5 + rng.IntN(16)
		keys := make([]string, n)
		recs := make([]*kgo.Record, n)
		for i := range n {
			keys[i] = fmt.Sprintf("%s-%d", txnID, i)
			recs[i] = &kgo.Record{Key: []byte(keys[i]), Value: []byte(keys[i] + padding)}
		}
		led.txnProduced.Add(int64(n))
		pctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		perr := cl.ProduceSync(pctx, recs...).FirstErr()
		cancel()
		commit := perr == nil && rng.IntN(10) < 7
		ectx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		eerr := cl.EndTransaction(ectx, kgo.TransactionEndTry(commit))
		cancel()
		switch {
		case commit && eerr == nil:
			led.txnResult(txnID, keys, txnCommitted)
		case commit:
			led.note(name+" commit", eerr)
			led.txnResult(txnID, keys, txnUnknown)
			actx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			if err := cl.EndTransaction(actx, kgo.TryAbort); err != nil {
				led.note(name+" abort after an unconfirmed commit", err)
			}
			cancel()
			drop()
		default:
			// Commit never requested: whatever the abort's fate, the
			// records must never become visible.
			led.txnResult(txnID, keys, txnAborted)
			if perr != nil {
				led.note(name+" produce", perr)
			}
			if eerr != nil {
				led.note(name+" abort", eerr)
				drop()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(100+rng.IntN(200)) * time.Millisecond):
		}
	}
}

// group runs slots consumer-group members on topicIdem and replaces one at
// random every churn interval. Members commit what they processed after
// every poll and on revocation, with rebalances blocked while a poll is
// being processed, so a partition's next owner resumes exactly at the last
// commit.
type group struct {
	addr string
	led  *ledger

	mu      sync.Mutex // guards members and nextID
	members map[int]*member
	nextID  int
}

type member struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
}

func (g *group) run(ctx context.Context, slots int, churn time.Duration) {
	g.members = map[int]*member{}
	for slot := range slots {
		g.startMember(slot)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	for {
		wait := churn/2 + time.Duration(rng.Int64N(int64(churn)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		slot := rng.IntN(slots)
		g.stopMember(slot)
		g.startMember(slot)
		g.led.churns.Add(1)
	}
}

func (g *group) startMember(slot int) {
	g.mu.Lock()
	g.nextID++
	name := fmt.Sprintf("member-%d", g.nextID)
	mctx, cancel := context.WithCancel(context.Background())
	m := &member{name: name, cancel: cancel, done: make(chan struct{})}
	g.members[slot] = m
	g.mu.Unlock()
	go func() {
		defer close(m.done)
		runMember(mctx, g.addr, name, g.led)
	}()
}

func (g *group) stopMember(slot int) {
	g.mu.Lock()
	m := g.members[slot]
	delete(g.members, slot)
	g.mu.Unlock()
	if m != nil {
		m.cancel()
		<-m.done
	}
}

func (g *group) stopAll() {
	g.mu.Lock()
	var slots []int
	for s := range g.members {
		slots = append(slots, s)
	}
	g.mu.Unlock()
	for _, s := range slots {
		g.stopMember(s)
	}
}

func runMember(ctx context.Context, addr, name string, led *ledger) {
	var mu sync.Mutex
	next := map[int32]int64{} // partition -> next expected offset, -1 right after assignment
	commit := func(cl *kgo.Client) {
		offs := cl.UncommittedOffsets()
		if len(offs) == 0 {
			return
		}
		for _, ps := range offs {
			for p, o := range ps {
				led.commitAttempt(p, o.Offset)
			}
		}
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl.CommitOffsetsSync(cctx, offs, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				led.note(name+" commit", err)
				return
			}
			for i, t := range resp.Topics {
				for j, p := range t.Partitions {
					if p.ErrorCode != 0 {
						led.note(name+" commit", fmt.Errorf("partition error code %d", p.ErrorCode))
						continue
					}
					led.commitAck(p.Partition, req.Topics[i].Partitions[j].Offset)
					led.groupCommits.Add(1)
				}
			}
		})
	}
	cl, err := kgo.NewClient(append(baseOpts(addr), kgo.ConsumerGroup(groupName), kgo.ConsumeTopics(topicIdem),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
			led.groupRebalance.Add(1)
			mu.Lock()
			defer mu.Unlock()
			for _, p := range assigned[topicIdem] {
				next[p] = -1
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, cl *kgo.Client, revoked map[string][]int32) {
			commit(cl)
			mu.Lock()
			defer mu.Unlock()
			for _, p := range revoked[topicIdem] {
				delete(next, p)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range lost[topicIdem] {
				delete(next, p)
			}
		}),
	)...)
	if err != nil {
		led.violation("%s: client: %v", name, err)
		return
	}
	defer cl.Close() // leaves the group
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				led.note(name+" fetch", err)
			}
		})
		mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			led.groupConsumed.Add(1)
			want, ok := next[r.Partition]
			switch {
			case !ok:
				// Revoked or lost while the fetch was buffered.
			case want == -1:
				led.resumed(name, r.Partition, r.Offset)
			case r.Offset != want:
				led.violation("group: %s %s/%d: offset %d, want %d", name, r.Topic, r.Partition, r.Offset, want)
			}
			if ok {
				next[r.Partition] = r.Offset + 1
			}
		})
		mu.Unlock()
		commit(cl)
		cl.AllowRebalance()
	}
	commit(cl)
}
