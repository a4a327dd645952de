package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/minibroker/minibroker/internal/perf"
)

// newPerfCmd is `minibroker perf produce|consume`, a load generator for
// any Kafka-protocol broker (see internal/perf).
func newPerfCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "perf",
		Short: "Load-test a Kafka-protocol broker (produce or consume)",
	}
	cmd.AddCommand(newPerfRunCmd("produce", "Produce records and report throughput and ack latency (of one record in 16)", perf.Produce),
		newPerfRunCmd("consume", "Consume a topic from the start and report throughput and end-to-end latency", perf.Consume))
	return cmd
}

func newPerfRunCmd(name, short string, run func(context.Context, perf.Config) (*perf.Result, error)) *cobra.Command {
	var (
		cfg      perf.Config
		brokers  string
		asJSON   bool
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   name,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Brokers = strings.Split(brokers, ",")
			cfg.ProgressInterval = interval
			if interval > 0 {
				cfg.Progress = cmd.ErrOrStderr()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			res, err := run(ctx, cfg)
			if res != nil {
				if asJSON {
					enc := json.NewEncoder(cmd.OutOrStdout())
					enc.SetIndent("", "  ")
					if jerr := enc.Encode(res); jerr != nil {
						return jerr
					}
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), res.String())
				}
			}
			if err == nil && res != nil && res.Errors > 0 {
				err = fmt.Errorf("%d records failed (first: %s)", res.Errors, res.FirstError)
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&brokers, "brokers", "127.0.0.1:9092", "bootstrap addresses, comma-separated")
	fs.StringVar(&cfg.Topic, "topic", "perf", "topic (created when missing)")
	fs.Int32Var(&cfg.Partitions, "partitions", 1, "partitions of the topic when it is created")
	fs.Int64Var(&cfg.Records, "records", 0, "stop after this many records")
	fs.DurationVar(&cfg.Duration, "duration", 0, "stop after this long (with --records: whichever comes first)")
	fs.IntVar(&cfg.RecordSize, "record-size", 100, "record value size in bytes")
	fs.IntVar(&cfg.Concurrency, "concurrency", 1, "number of producer or consumer clients")
	fs.BoolVar(&asJSON, "json", false, "print the result as JSON")
	fs.BoolVar(&cfg.RawBatches, "raw-batches", false,
		"measure the broker, not a client: send one pre-encoded 1 MiB batch per Produce request (--max-in-flight of them) or count fetched records by batch headers without decoding them")
	fs.DurationVar(&interval, "progress", 5*time.Second, "print a progress line to stderr this often (0: never)")
	if name == "produce" {
		fs.StringVar(&cfg.Acks, "acks", "all", "0, 1 or all")
		fs.BoolVar(&cfg.Idempotent, "idempotent", false, "idempotent producer (needs --acks all)")
		fs.StringVar(&cfg.Compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
		fs.DurationVar(&cfg.Linger, "linger", 0, "producer linger")
		fs.IntVar(&cfg.MaxInFlight, "max-in-flight", 0,
			"produce requests in flight per broker, non-idempotent producer (max.in.flight.requests.per.connection; 0: kgo's default, 1)")
		fs.Float64Var(&cfg.Throughput, "throughput", 0,
			"records per second over all clients, sent on a fixed schedule (kafka-producer-perf-test.sh's --throughput; 0: no limit)")
	} else {
		cfg.Acks = "all"
		fs.Int32Var(&cfg.FetchSize, "fetch-size", perf.DefaultFetchSize,
			"bytes per partition per fetch (max.partition.fetch.bytes), as kafka-consumer-perf-test.sh's --fetch-size")
	}
	return cmd
}
