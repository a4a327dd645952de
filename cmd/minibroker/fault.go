package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/minibroker/minibroker/internal/fault"
)

// newFaultCmd sets, lists and clears faults on a broker started with
// --set faults.enable=true, through its HTTP admin API (--admin, which
// answers fault requests from loopback clients only).
func newFaultCmd() *cobra.Command {
	var admin adminFlags
	cmd := &cobra.Command{
		Use:   "fault",
		Short: "Inject faults into a broker for tests (set, list, clear; needs --set faults.enable=true)",
		Long: `Faults make a running broker misbehave on purpose, so that you can test how your
application copes: Kafka errors, slow answers, dropped connections, failing
partition writes, a paused, slowed or unreachable mirror link. The broker
must run with --set faults.enable=true; the fault endpoints answer loopback
clients only.`,
	}
	admin.register(cmd)
	client := admin.client

	var (
		kind, api, errName, topic, mirrorName string
		partition                             int32
		latency                               time.Duration
		bytesPerSecond, nth, count            int64
		probability                           float64
		seed                                  uint64
		setJSON                               bool
	)
	set := &cobra.Command{
		Use:   "set --kind KIND [flags]",
		Short: "Set a fault; prints its id",
		Example: `  minibroker fault set --kind error --api Produce --error NOT_LEADER_OR_FOLLOWER --count 3
  minibroker fault set --kind error --api Heartbeat --error NOT_COORDINATOR --nth 5 --count 1
  minibroker fault set --kind latency --api Fetch --latency 500ms
  minibroker fault set --kind drop --api Produce --probability 0.1 --seed 42
  minibroker fault set --kind storage --topic orders --partition 2
  minibroker fault set --kind mirror-pause --mirror from-a
  minibroker fault set --kind mirror-throttle --mirror from-a --bytes-per-second 65536
  minibroker fault set --kind mirror-unreachable --mirror from-a`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec := fault.Spec{Kind: fault.Kind(kind), Topic: topic, Mirror: mirrorName, BytesPerSecond: bytesPerSecond,
				Nth: nth, Count: count, Probability: probability, Seed: seed, LatencyMs: latency.Milliseconds()}
			if api != "" {
				k, err := fault.ParseAPI(api)
				if err != nil {
					return err
				}
				spec.APIKey = &k
			}
			if errName != "" {
				code, err := fault.ParseError(errName)
				if err != nil {
					return err
				}
				spec.ErrorCode = code
			}
			if cmd.Flags().Changed("partition") {
				spec.Partition = &partition
			}
			if err := spec.Validate(); err != nil {
				return err
			}
			st, err := client().SetFault(cmd.Context(), spec)
			if err != nil {
				return err
			}
			if setJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "fault %s set: %s\n", st.ID, st.Describe())
			return nil
		},
	}
	f := set.Flags()
	f.StringVar(&kind, "kind", "", fmt.Sprintf("what the fault does: %v", fault.Kinds))
	f.StringVar(&api, "api", "", "the Kafka API (name, as Produce, or key) of error, latency and drop faults (latency and drop: every API when empty)")
	f.StringVar(&errName, "error", "", "the Kafka error (name, as NOT_COORDINATOR, or code) an error fault answers with")
	f.StringVar(&topic, "topic", "", "only requests naming this topic (storage: the topic whose writes fail)")
	f.Int32Var(&partition, "partition", 0, "only requests naming this partition of --topic")
	f.DurationVar(&latency, "latency", 0, "a latency fault's delay")
	f.StringVar(&mirrorName, "mirror", "", "the mirror of a mirror-* fault (every mirror when empty)")
	f.Int64Var(&bytesPerSecond, "bytes-per-second", 0, "a mirror-throttle's rate")
	f.Int64Var(&nth, "nth", 0, "fire first on the Nth matching request (default 1: the next)")
	f.Int64Var(&count, "count", 0, "fire on this many matching requests, then expire (0: until cleared)")
	f.Float64Var(&probability, "probability", 0, "fire on each matching request with this probability, in (0, 1)")
	f.Uint64Var(&seed, "seed", 0, "seed of a probabilistic fault (random, and printed, when 0)")
	f.BoolVar(&setJSON, "json", false, "print JSON")
	set.MarkFlagRequired("kind")

	var listJSON bool
	list := &cobra.Command{
		Use: "list", Short: "List the faults set, with what they have done", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sts, err := client().Faults(cmd.Context())
			if err != nil {
				return err
			}
			if listJSON {
				return printJSON(cmd.OutOrStdout(), sts)
			}
			printFaults(cmd.OutOrStdout(), sts)
			return nil
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON")

	var all bool
	clear := &cobra.Command{
		Use: "clear ID… | --all", Short: "Clear faults",
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return fmt.Errorf("give fault ids or --all")
			}
			if all {
				n, err := client().ClearFaults(cmd.Context())
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d faults cleared\n", n)
				return nil
			}
			for _, id := range args {
				if err := client().ClearFault(cmd.Context(), id); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "fault %s cleared\n", id)
			}
			return nil
		},
	}
	clear.Flags().BoolVar(&all, "all", false, "clear every fault")
	cmd.AddCommand(set, list, clear)
	return cmd
}

func printFaults(w io.Writer, sts []fault.Status) {
	if len(sts) == 0 {
		fmt.Fprintln(w, "no faults")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tACTIVE\tMATCHED\tFIRED\tFAULT\tWHEN")
	for _, st := range sts {
		when := "always"
		switch {
		case st.Kind.IsLink():
			when = "until cleared"
		case st.Count > 0:
			when = fmt.Sprintf("requests %d..%d", st.Nth, st.Nth+st.Count-1)
		case st.Nth > 1:
			when = fmt.Sprintf("from request %d", st.Nth)
		}
		if st.Probability > 0 {
			when += fmt.Sprintf(", p=%g seed=%d", st.Probability, st.Seed)
		}
		fmt.Fprintf(tw, "%s\t%v\t%d\t%d\t%s\t%s\n", st.ID, st.Active, st.Matched, st.Fired, st.Describe(), when)
	}
	tw.Flush()
}
