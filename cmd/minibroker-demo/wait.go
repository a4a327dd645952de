package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/adminclient"
)

// newWaitCmd waits for a condition the demo's next step needs, polling
// every 200 ms, and fails after --timeout saying what it last saw.
func newWaitCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{Use: "wait", Short: "Wait until a mirror, a group or a log reaches a state"}
	cmd.PersistentFlags().DurationVar(&timeout, "timeout", 60*time.Second, "give up after this long")

	var admin, tokenFile, name, state string
	var caughtUp bool
	mirrorCmd := &cobra.Command{
		Use:   "mirror --admin HOST:PORT --name NAME --state STATE [--caught-up]",
		Short: "Every partition of the mirror in STATE (and, with --caught-up, no lag and the local end at the source's high watermark)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ac := adminclient.New(adminclient.Options{Addr: admin, TokenFile: tokenFile, Timeout: 5 * time.Second, Agent: "demo"})
			return poll(cmd.Context(), timeout, func() (bool, string) {
				st, err := ac.DescribeMirror(cmd.Context(), name)
				if err != nil {
					return false, err.Error()
				}
				if len(st.Partitions) == 0 {
					return false, "no partitions yet"
				}
				for _, p := range st.Partitions {
					seen := fmt.Sprintf("%s/%d %s, local end %d, source HW %d, lag %d", p.Topic, p.Partition, p.State,
						p.LocalLogEndOffset, p.SourceHighWater, p.LagRecords)
					if string(p.State) != state || (caughtUp && (p.LagRecords != 0 || p.LocalLogEndOffset < p.SourceHighWater)) {
						return false, seen
					}
				}
				return true, ""
			})
		},
	}
	mirrorCmd.Flags().StringVar(&admin, "admin", "", "the broker's HTTP admin HOST:PORT")
	mirrorCmd.Flags().StringVar(&tokenFile, "admin-token-file", "", "the broker's admin.token.file, when it has one")
	mirrorCmd.Flags().StringVar(&name, "name", "", "mirror name")
	mirrorCmd.Flags().StringVar(&state, "state", "MIRRORING", "state")
	mirrorCmd.Flags().BoolVar(&caughtUp, "caught-up", false, "also no lag")

	var brokers, topic, group string
	var committed, end int64
	groupCmd := &cobra.Command{
		Use:   "group --brokers HOST:PORT --group G --committed N",
		Short: "The group's committed offset (summed over the topic's partitions) is N",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdmin(brokers, func(adm *kadm.Client) error {
				return poll(cmd.Context(), timeout, func() (bool, string) {
					ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
					defer cancel()
					fetched, err := adm.FetchOffsets(ctx, group)
					if err != nil {
						return false, err.Error()
					}
					var sum int64 = -1
					fetched.Each(func(o kadm.OffsetResponse) {
						if o.Topic == topic && o.Err == nil && o.At >= 0 {
							sum = max(sum, 0) + o.At
						}
					})
					return sum == committed, fmt.Sprintf("group %s committed %d on %s", group, sum, brokers)
				})
			})
		},
	}
	endCmd := &cobra.Command{
		Use:   "end --brokers HOST:PORT --end N",
		Short: "The topic's end offset (summed over partitions) is at least N",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdmin(brokers, func(adm *kadm.Client) error {
				return poll(cmd.Context(), timeout, func() (bool, string) {
					ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
					defer cancel()
					ends, err := adm.ListEndOffsets(ctx, topic)
					if err == nil {
						err = ends.Error()
					}
					if err != nil {
						return false, err.Error()
					}
					var sum int64
					ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
					return sum >= end, fmt.Sprintf("end offset %d on %s", sum, brokers)
				})
			})
		},
	}
	for _, c := range []*cobra.Command{groupCmd, endCmd} {
		c.Flags().StringVar(&brokers, "brokers", "", "bootstrap HOST:PORT")
		c.Flags().StringVar(&topic, "topic", "demo", "topic")
	}
	groupCmd.Flags().StringVar(&group, "group", "demo-app", "group")
	groupCmd.Flags().Int64Var(&committed, "committed", 0, "committed offset to wait for")
	endCmd.Flags().Int64Var(&end, "end", 0, "end offset to wait for")
	cmd.AddCommand(mirrorCmd, groupCmd, endCmd)
	return cmd
}

func withAdmin(brokers string, f func(*kadm.Client) error) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		return err
	}
	defer cl.Close()
	return f(kadm.NewClient(cl))
}

func poll(ctx context.Context, timeout time.Duration, check func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, seen := check()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not reached after %v; last seen: %s", timeout, seen)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
