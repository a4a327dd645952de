package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share groups section (KIP-932): one topic of one partition filled
// once with sgRecords records, read whole by a classic consumer group
// (one kgo member) and by a share group of one and of three kgo share
// consumers (each accepting every record), a fresh group each time,
// against one `minibroker serve` process and, as the peer, the share
// groups against one kfakeserve process, the five alternating within
// each run (group.initial.rebalance.delay.ms=0: a classic group's first
// join is not delayed). Measured from the consumers' creation (joining
// included) to the last record: records per second, and the broker's CPU
// per record (from /proc/PID/stat).

const (
	sgTopic      = "share-bench"
	sgRecords    = 200_000
	sgRecordSize = 100
)

type shareBenchRow struct {
	name      string
	share     bool
	kfake     bool // against kfakeserve (in memory, nothing fsynced)
	consumers int
	recsPS    []float64
	cpuPerRec []float64 // broker CPU µs per record
}

func runShareGroups(r *report) error {
	httpAddr, err := freeAddr()
	if err != nil {
		return err
	}
	mb, err := startProcess(r.bin, "minibroker", "--http-listen", httpAddr, "--set", "group.initial.rebalance.delay.ms=0")
	if err != nil {
		return err
	}
	defer mb.stop()
	kf, err := startProcess(r.bin, "kfake")
	if err != nil {
		return err
	}
	defer kf.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	admins := map[*process]*kgo.Client{}
	for _, p := range []*process{mb, kf} {
		adm, err := sgFill(ctx, p)
		if err != nil {
			return err
		}
		defer adm.Close()
		admins[p] = adm
	}
	rows := []*shareBenchRow{
		{name: "classic group, 1 consumer", consumers: 1},
		{name: "share group, 1 consumer", share: true, consumers: 1},
		{name: "share group, 3 consumers", share: true, consumers: 3},
		{name: "kfake: share group, 1 consumer", share: true, consumers: 1, kfake: true},
		{name: "kfake: share group, 3 consumers", share: true, consumers: 3, kfake: true},
	}
	for run := range r.opts.runs {
		for k := range rows {
			rw := rows[(k+run)%len(rows)]
			p := mb
			if rw.kfake {
				p = kf
			}
			if err := sgMeasure(ctx, p, admins[p], rw, fmt.Sprintf("bench-%d-%d", run, k)); err != nil {
				return fmt.Errorf("%s: %w", rw.name, err)
			}
		}
	}
	r.shareGroups = rows
	return nil
}

// sgFill creates the topic on p and produces sgRecords records to it; it
// returns the producing client, for the group configs.
func sgFill(ctx context.Context, p *process) (*kgo.Client, error) {
	prod, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.DefaultProduceTopic(sgTopic), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(prod)
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, sgTopic); err != nil || resp.Err != nil {
		prod.Close()
		return nil, fmt.Errorf("create %s: %v %v", sgTopic, err, resp.Err)
	}
	value := make([]byte, sgRecordSize)
	for sent := 0; sent < sgRecords; {
		recs := make([]*kgo.Record, 0, 1000)
		for range 1000 {
			recs = append(recs, &kgo.Record{Value: value})
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			prod.Close()
			return nil, err
		}
		sent += len(recs)
	}
	return prod, nil
}

// sgMeasure reads the whole topic once with a fresh group.
func sgMeasure(ctx context.Context, p *process, admin *kgo.Client, rw *shareBenchRow, group string) error {
	if rw.share {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
		res.Configs = append(res.Configs, c)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, admin)
		if err != nil || resp.Resources[0].ErrorCode != 0 {
			return fmt.Errorf("group config: %v", err)
		}
	}
	var (
		count      atomic.Int64
		t0, cpu0   = time.Now(), p.cpu()
		done       = make(chan struct{})
		finishOnce sync.Once
		wg         sync.WaitGroup
	)
	mctx, stop := context.WithTimeout(ctx, 5*time.Minute)
	defer stop()
	for range rw.consumers {
		opts := []kgo.Opt{kgo.SeedBrokers(p.addr), kgo.ConsumeTopics(sgTopic)}
		if rw.share {
			opts = append(opts, kgo.ShareGroup(group))
		} else {
			opts = append(opts, kgo.ConsumerGroup(group), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for mctx.Err() == nil {
				fs := cl.PollFetches(mctx)
				n := fs.NumRecords()
				if n == 0 {
					continue
				}
				if count.Add(int64(n)) >= sgRecords {
					finishOnce.Do(func() { close(done) })
				}
			}
		}()
	}
	select {
	case <-done:
	case <-mctx.Done():
		stop()
		wg.Wait()
		return fmt.Errorf("read %d of %d records", count.Load(), sgRecords)
	}
	elapsed, cpu := time.Since(t0), p.cpu()-cpu0
	stop()
	wg.Wait()
	rw.recsPS = append(rw.recsPS, float64(sgRecords)/elapsed.Seconds())
	rw.cpuPerRec = append(rw.cpuPerRec, float64(cpu.Microseconds())/float64(sgRecords))
	logf("share groups %s: %d records in %s, broker CPU %s (%.2f µs/record)", rw.name, sgRecords,
		elapsed.Round(time.Millisecond), cpu, rw.cpuPerRec[len(rw.cpuPerRec)-1])
	return nil
}

// renderShareGroups is the section's table.
func (r *report) renderShareGroups(p func(string, ...any)) {
	rows := r.shareGroups
	if len(rows) == 0 {
		return
	}
	p("## Share groups\n\n")
	p("One topic of one partition holding %d records of %d B, read whole by a classic consumer group of one kgo member and by share groups "+
		"(KIP-932) of one and three kgo share consumers accepting every record, a fresh group each time, against one `minibroker serve` "+
		"process (group.initial.rebalance.delay.ms=0) and, as the peer, share groups against one kfakeserve process (in memory), the five "+
		"alternating within each of %d runs; from the consumers' creation (joining included) to the last record, medians with the range. "+
		"The broker's CPU is from /proc/PID/stat. minibroker fsyncs a share partition's state before answering each acknowledgement "+
		"(docs/SHARE_GROUPS.md); kfake keeps it in memory. Both hold at most 2000 records in flight per share partition "+
		"(group.share.partition.max.record.locks, Kafka's default).\n\n",
		sgRecords, sgRecordSize, r.opts.runs)
	p("| group | records/s | broker CPU µs per record |\n|---|---|---|\n")
	for _, rw := range rows {
		p("| %s | %s | %s |\n", rw.name, cell(rw.recsPS), cell(rw.cpuPerRec))
	}
	if len(rows) == 5 {
		p("\nminibroker share over classic, records/s: %s with one consumer, %s with three. minibroker over kfake, share groups: "+
			"records/s %s with one consumer, %s with three; broker CPU per record %s and %s.\n",
			ratio(med(rows[1].recsPS), med(rows[0].recsPS)), ratio(med(rows[2].recsPS), med(rows[0].recsPS)),
			ratio(med(rows[1].recsPS), med(rows[3].recsPS)), ratio(med(rows[2].recsPS), med(rows[4].recsPS)),
			ratio(med(rows[1].cpuPerRec), med(rows[3].cpuPerRec)), ratio(med(rows[2].cpuPerRec), med(rows[4].cpuPerRec)))
	}
	p("\n```\ngo run ./test/bench -only sharegroups -runs %d\n```\n\n", r.opts.runs)
}
