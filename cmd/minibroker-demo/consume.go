package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumerLedger is what `consume` prints when it stops: the numbers the
// group member read (a number read twice is a duplicate delivery) and the
// offsets it committed last.
type consumerLedger struct {
	Client    string     `json:"client"` // "consumer"
	Brokers   string     `json:"brokers"`
	Group     string     `json:"group"`
	Read      [][2]int64 `json:"read"`
	ReadCount int        `json:"read_count"`
	ReadTwice []int64    `json:"read_twice"`
	Other     int        `json:"other"` // values that are not numbers (stray records)
	FirstOff  int64      `json:"first_offset"`
	NextOff   int64      `json:"next_offset"`
}

func newConsumeCmd() *cobra.Command {
	var brokers, topic, group string
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Group consumer (read_committed) of the numbered records; on SIGTERM it reads up to the end, commits, leaves and prints its ledger",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			led, err := consumeGroup(ctx, brokers, topic, group)
			if led != nil {
				json.NewEncoder(cmd.OutOrStdout()).Encode(led)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&brokers, "brokers", "", "bootstrap HOST:PORT")
	f.StringVar(&topic, "topic", "demo", "topic")
	f.StringVar(&group, "group", "demo-app", "consumer group")
	cmd.MarkFlagRequired("brokers")
	return cmd
}

// consumeGroup reads as a group member until stop ends; then it drains:
// it keeps reading until its position reaches the end offsets seen at that
// moment (at most 20 s), commits synchronously and leaves the group, so the
// next member — on this cluster or, through the mirror's group-offset sync,
// on another — starts exactly after the last record read here.
func consumeGroup(stop context.Context, brokers, topic, group string) (*consumerLedger, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("minibroker-demo-consumer"))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	led := &consumerLedger{Client: "consumer", Brokers: brokers, Group: group, FirstOff: -1}
	read := numbers{}
	next := map[int32]int64{}
	var drainTo map[int32]int64 // set once stop ends
	drainDeadline := time.Time{}
	lastCommit := time.Now()
	for {
		if stop.Err() != nil && drainTo == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
			cancel()
			if err != nil {
				return finish(cl, led, read, next, fmt.Errorf("end offsets: %w", err))
			}
			drainTo = map[int32]int64{}
			ends.Each(func(o kadm.ListedOffset) { drainTo[o.Partition] = o.Offset })
			drainDeadline = time.Now().Add(20 * time.Second)
		}
		if drainTo != nil && caughtUp(next, drainTo) {
			return finish(cl, led, read, next, nil)
		}
		if drainTo != nil && time.Now().After(drainDeadline) {
			return finish(cl, led, read, next, fmt.Errorf("drain: position %v did not reach %v", next, drainTo))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			if led.FirstOff < 0 {
				led.FirstOff = r.Offset
			}
			next[r.Partition] = r.Offset + 1
			if n, err := strconv.ParseInt(string(r.Value), 10, 64); err == nil {
				read[n]++
			} else {
				led.Other++
			}
		})
		for _, fe := range fs.Errors() {
			if fe.Err != context.DeadlineExceeded {
				fmt.Fprintf(os.Stderr, "consumer: fetch %s/%d: %v\n", fe.Topic, fe.Partition, fe.Err)
			}
		}
		if time.Since(lastCommit) > 500*time.Millisecond {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			cl.CommitUncommittedOffsets(cctx)
			cancel()
			lastCommit = time.Now()
		}
	}
}

// caughtUp: the position of every partition is at or past its end. The
// end offset of read_committed data can lie past the last record (a
// control batch), so a partition whose records end before it counts once
// the fetch position reaches it — kgo's position is the next offset.
func caughtUp(next, ends map[int32]int64) bool {
	for p, end := range ends {
		if next[p] < end && end > 0 {
			return false
		}
	}
	return true
}

func finish(cl *kgo.Client, led *consumerLedger, read numbers, next map[int32]int64, err error) (*consumerLedger, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cerr := cl.CommitUncommittedOffsets(ctx); cerr != nil && err == nil {
		err = fmt.Errorf("commit: %w", cerr)
	}
	cl.LeaveGroupContext(ctx)
	led.Read, led.ReadCount, led.ReadTwice = read.ranges(), len(read), read.repeated()
	for _, n := range next {
		led.NextOff = max(led.NextOff, n)
	}
	if err != nil && strings.Contains(err.Error(), "context canceled") {
		err = nil
	}
	return led, err
}
