package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/minibroker/minibroker/internal/adminclient"
	"github.com/minibroker/minibroker/internal/drill"
	"github.com/minibroker/minibroker/internal/mirror"
)

// errDrillFailed makes `minibroker drill` exit 3 when the drill measured
// a loss its plan did not predict, a gap, or no service on B.
type errDrillFailed struct{ problems []string }

func (e errDrillFailed) Error() string { return fmt.Sprintf("drill failed: %v", e.problems) }
func (errDrillFailed) ExitCode() int   { return 3 }

// newDrillCmd is `minibroker drill`: a failover drill from A to its
// mirror B (B's admin API is --admin).
func newDrillCmd() *cobra.Command {
	var admin adminFlags
	var cfg drill.Config
	var tf topicFlags
	var asJSON bool
	var svgFile, jsonFile string
	cmd := &cobra.Command{
		Use:   "drill --from A --to B --mirror NAME --topics T|PATTERN[,…] --admin B_ADMIN",
		Short: "Rehearse a failover: canary traffic on A, plan, mirror stop on B, traffic on B; measures RPO, RTO, gaps, duplicates",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Admin = admin.client()
			cfg.ToAdmin = admin.addr
			topics, note, err := drillTopics(cmd.Context(), cfg.Admin, cfg.Mirror, tf.request())
			if err != nil {
				return err
			}
			cfg.Topics = topics
			if !asJSON {
				fmt.Fprint(cmd.OutOrStdout(), note)
			}
			if cfg.Failback {
				fa := admin
				fa.addr = cfg.FromAdmin
				cfg.FromAdminClient = fa.client()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			rep, err := drill.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if svgFile != "" {
				f, err := os.Create(svgFile)
				if err != nil {
					return err
				}
				err = rep.WriteSVG(f)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return err
				}
			}
			if jsonFile != "" {
				f, err := os.Create(jsonFile)
				if err != nil {
					return err
				}
				err = printJSON(f, rep)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return err
				}
			}
			if asJSON {
				err = printJSON(cmd.OutOrStdout(), rep)
			} else {
				printDrill(cmd.OutOrStdout(), rep)
			}
			if err != nil {
				return err
			}
			if !rep.Passed {
				cmd.SilenceUsage = true
				return errDrillFailed{rep.Problems}
			}
			return nil
		},
	}
	admin.register(cmd)
	f := cmd.Flags()
	f.StringSliceVar(&cfg.From, "from", nil, "bootstrap servers of the primary (A)")
	f.StringSliceVar(&cfg.To, "to", nil, "bootstrap servers of the standby (B), which mirrors A")
	f.StringVar(&cfg.Mirror, "mirror", "", "the mirror on B that mirrors the topics from A")
	tf.register(cmd, "topics to drill (the canary writes to every partition of each, in turn; patterns are resolved against the mirror's topics on B, as stop resolves them)", false)
	f.DurationVar(&cfg.Duration, "duration", 10*time.Second, "total drill time: half on A, half on B")
	f.IntVar(&cfg.Rate, "rate", 50, "canary records per second")
	f.BoolVar(&cfg.Failback, "failback", false, "after the phase on B, have A mirror B (mirror --failback-mirror, created on A through --from-admin), fail over to A again and run a third phase there")
	f.StringVar(&cfg.FailbackMirror, "failback-mirror", "drill-failback", "the mirror the failback creates on A")
	f.BoolVar(&cfg.AllowTruncate, "allow-truncate", false, "with --failback: let the failback's mirror start cut A's records past where A diverges from B (as mirror start --allow-truncate); without it the drill stops before such a cut and says how many records it would cut")
	f.StringVar(&cfg.FromAdmin, "from-admin", "127.0.0.1:9644", "A's HTTP admin address, for --failback (same token and TLS flags as --admin)")
	f.BoolVar(&cfg.Transactional, "transactional", false, "a transactional canary producer (one committed transaction per record)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&svgFile, "svg", "", "write the timeline as SVG to this file")
	f.StringVar(&jsonFile, "report", "", "write the JSON report to this file")
	for _, n := range []string{"from", "to", "mirror", "topics"} {
		cmd.MarkFlagRequired(n)
	}
	return cmd
}

// drillTopics is the drill's topics: --topics names as given, and the
// topics of the mirror its patterns match on B, resolved once before the
// drill (by the plan endpoint, as a stop resolves them), so the canary,
// the plan and the stop all cover the same topics; note says what the
// patterns matched.
func drillTopics(ctx context.Context, b *adminclient.Client, name string, req mirror.TopicsRequest) (topics []string, note string, err error) {
	if len(req.TopicPatterns) == 0 {
		return req.Topics, "", nil
	}
	pl, err := b.PlanMirrorTopics(ctx, name, mirror.TopicsRequest{TopicPatterns: req.TopicPatterns})
	if err != nil {
		return nil, "", err
	}
	topics = req.Topics
	if pl.Match != nil {
		for _, t := range pl.Match.Matched {
			if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	return topics, matchNote(pl.Match), nil
}

func printDrill(w io.Writer, rep *drill.Report) {
	fmt.Fprintf(w, "drill of mirror %s, topics %v\n", rep.Mirror, rep.Topics)
	plan := func(label string, pl *mirror.Plan) {
		fmt.Fprintf(w, "%-14s truncate %d, open transactions %d, missing %d offsets; lost %d records, uncommitted %d, RPO %d ms; a start would cut %d; at risk %v\n",
			label, pl.WouldTruncate, pl.OpenTransactions, pl.MissingRecords, pl.LostRecords, pl.UncommittedRecords, pl.RPOMillis, pl.DivergenceTruncate, pl.AtRisk)
	}
	plan("plan", &rep.Plan)
	if rep.Plan.FailoverMode != "" {
		fmt.Fprintf(w, "failover mode  %s; the plan's modes side by side:\n", rep.Plan.FailoverMode)
		printModes(w, rep.Plan)
	}
	fmt.Fprintf(w, "acknowledged   A %d, B %d, A after failback %d (produce errors %d)\n", rep.AckedOnA, rep.AckedOnB, rep.AckedOnA2, rep.ProduceErrors)
	if sp := rep.FailbackStartPlan; sp != nil {
		plan("failback start", sp)
	}
	if fp := rep.FailbackPlan; fp != nil {
		plan("failback plan", fp)
	}
	fmt.Fprintf(w, "RPO            %d records acknowledged on A never reached B (predicted %d %s), %d ms\n", len(rep.LostAtFailover), rep.PredictedLoss, rep.PredictedUnit, rep.RPOMillis)
	fmt.Fprintf(w, "lost on last   %d (acknowledged on the last primary, not in its log)\n", len(rep.LostOnB))
	fmt.Fprintf(w, "RTO            first produce on B %d ms, first consume on B %d ms after the stop command\n", rep.RTOProduceMs, rep.RTOConsumeMs)
	fmt.Fprintf(w, "group saw      %d records: gaps %d, duplicates %d (%d read again from the commit synced at the failover, %d unexplained), out of order %d\n",
		rep.Consumed, len(rep.Gaps), len(rep.Duplicates), rep.ReadAgain, len(rep.Unexplained), len(rep.OutOfOrder))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TOPIC\tPARTITION\tACKED\tLOST AT FAILOVER\tPREDICTED\tRPO MS\tPLAN RPO MS\tLOST ON LAST\tGAPS\tDUPLICATES")
	for _, p := range rep.Partitions {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", p.Topic, p.Partition, p.Acked, p.LostAtFailover, p.PredictedLost,
			p.RPOMillis, p.PlanRPOMillis, p.LostOnB, p.Gaps, p.Duplicates)
	}
	tw.Flush()
	if rep.Passed {
		fmt.Fprintln(w, "result         PASSED")
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintf(w, "problem        %s\n", p)
		}
	}
}
