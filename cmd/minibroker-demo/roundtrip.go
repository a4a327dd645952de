package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newRoundtripCmd() *cobra.Command {
	var brokers, topic, tag, expect string
	var n int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "roundtrip",
		Short: "Produce records tagged --tag and read them back; print the address the broker advertised",
		Long: `Produce --records records with values "TAG-1".., read the partition
back from the offset of the first one and check they are all there, in
order, once. It prints the broker address Metadata advertised, which the
client then used: a client in a container must be told the service name,
one on the host localhost. Exit 1 when anything differs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topic == "" {
				topic = "listeners-" + tag
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			advertised, err := roundtrip(ctx, brokers, topic, tag, n)
			if expect != "" && advertised != expect {
				return fmt.Errorf("%s via %s: the broker advertised %q, want %q", tag, brokers, advertised, expect)
			}
			if err != nil {
				return fmt.Errorf("%s via %s, broker advertised as %s: %w", tag, brokers, advertised, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: bootstrap %s, broker advertised as %s: produced %d records and read them back\n",
				tag, brokers, advertised, n)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&brokers, "brokers", "", "bootstrap HOST:PORT")
	f.StringVar(&topic, "topic", "", "topic (auto-created; default listeners-TAG)")
	f.StringVar(&tag, "tag", "client", "value prefix naming this client")
	f.IntVar(&n, "records", 10, "records")
	f.StringVar(&expect, "expect-advertised", "", "fail unless Metadata advertises this HOST:PORT")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "give up after this long")
	cmd.MarkFlagRequired("brokers")
	return cmd
}

func roundtrip(ctx context.Context, brokers, topic, tag string, n int) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		return "", err
	}
	defer cl.Close()
	meta, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return "", err
	}
	advertised := ""
	for _, b := range meta.Brokers {
		advertised = fmt.Sprintf("%s:%d", b.Host, b.Port)
	}
	var recs []*kgo.Record
	for i := 1; i <= n; i++ {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", tag, i)})
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		return advertised, fmt.Errorf("produce: %w", err)
	}
	first := res[0].Record
	rd, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {first.Partition: kgo.NewOffset().At(first.Offset)}}))
	if err != nil {
		return advertised, err
	}
	defer rd.Close()
	var got []string
	for len(got) < n {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return advertised, fmt.Errorf("read back %d of %d: %w", len(got), n, err)
		}
		for _, fe := range fs.Errors() {
			return advertised, fmt.Errorf("fetch: %w", fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i := range n {
		if want := fmt.Sprintf("%s-%d", tag, i+1); got[i] != want {
			return advertised, fmt.Errorf("record %d is %q, want %q", i, got[i], want)
		}
	}
	return advertised, nil
}
