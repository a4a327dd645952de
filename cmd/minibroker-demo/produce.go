package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// producerLedger is what `produce` prints when it stops: which numbers the
// broker acknowledged. Numbers from..next-1 were sent; the ones not in
// Acked failed (they may or may not be in the log, as with any producer).
type producerLedger struct {
	Client     string     `json:"client"` // "producer"
	Brokers    string     `json:"brokers"`
	Prefix     string     `json:"prefix,omitempty"`
	From       int64      `json:"from"`
	Next       int64      `json:"next"`
	Acked      [][2]int64 `json:"acked"`
	AckedCount int        `json:"acked_count"`
	Failed     int        `json:"failed"`
	FirstError string     `json:"first_error,omitempty"`
	StartMs    int64      `json:"start_ms"`
	FirstAckMs int64      `json:"first_ack_ms"`
	LastAckMs  int64      `json:"last_ack_ms"`
}

func newProduceCmd() *cobra.Command {
	var (
		brokers, topic, prefix string
		from, count            int64
		rate                   int
	)
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Idempotent producer of numbered records; prints its ledger (JSON) when stopped (SIGTERM) or done",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			led, err := produceNumbered(ctx, brokers, topic, prefix, from, count, rate)
			if led != nil {
				json.NewEncoder(cmd.OutOrStdout()).Encode(led)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&brokers, "brokers", "", "bootstrap HOST:PORT")
	f.StringVar(&topic, "topic", "demo", "topic")
	f.StringVar(&prefix, "prefix", "", "value prefix (the demo's stray writer uses \"stray-\")")
	f.Int64Var(&from, "from", 1, "first record number")
	f.Int64Var(&count, "count", 0, "stop after this many records (0: until SIGTERM)")
	f.IntVar(&rate, "rate", 200, "records per second")
	cmd.MarkFlagRequired("brokers")
	return cmd
}

// produceNumbered sends records whose value is prefix+number, in order,
// at rate records/s, until ctx ends or count were sent, then waits for the
// outstanding acknowledgements (at most 15 s).
func produceNumbered(ctx context.Context, brokers, topic, prefix string, from, count int64, rate int) (*producerLedger, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordDeliveryTimeout(15*time.Second), kgo.ClientID("minibroker-demo-producer"))
	if err != nil {
		return nil, err
	}
	led := &producerLedger{Client: "producer", Brokers: brokers, Prefix: prefix, From: from, Next: from, StartMs: time.Now().UnixMilli()}
	var (
		mu    sync.Mutex
		acked = numbers{}
	)
	done := func(n int64) func(*kgo.Record, error) {
		return func(_ *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				led.Failed++
				if led.FirstError == "" {
					led.FirstError = err.Error()
				}
				return
			}
			now := time.Now().UnixMilli()
			if led.FirstAckMs == 0 {
				led.FirstAckMs = now
				fmt.Fprintf(os.Stderr, "producer: first record acknowledged by %s\n", brokers)
			}
			led.LastAckMs = now
			acked[n]++
		}
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for count == 0 || led.Next-from < count {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		if ctx.Err() != nil {
			break
		}
		due := from + int64(time.Since(start).Seconds()*float64(rate))
		for ; led.Next <= due && (count == 0 || led.Next-from < count); led.Next++ {
			cl.Produce(context.Background(), &kgo.Record{Value: []byte(prefix + strconv.FormatInt(led.Next, 10))}, done(led.Next))
		}
	}
	flushCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ferr := cl.Flush(flushCtx)
	cl.Close() // fails what is still buffered: no callback runs after this
	mu.Lock()
	defer mu.Unlock()
	led.Acked, led.AckedCount = acked.ranges(), len(acked)
	if ferr != nil {
		return led, fmt.Errorf("flush: %w", ferr)
	}
	return led, nil
}
