package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/minibroker/minibroker/internal/adminclient"
	"github.com/minibroker/minibroker/internal/mirror"
)

// errAtRisk is `mirror plan`'s answer when a failover now would lose
// records: the command exits 2 (1 stays for failures to make the plan).
type errAtRisk struct{ pl mirror.Plan }

func (e errAtRisk) Error() string {
	return fmt.Sprintf("data at risk: a failover now would truncate %d offsets (%d open transactions) and miss %d the source has (%d acknowledged records lost, RPO %d ms); a start would cut %d",
		e.pl.WouldTruncate, e.pl.OpenTransactions, e.pl.MissingRecords, e.pl.LostRecords, e.pl.RPOMillis, e.pl.DivergenceTruncate)
}

func (errAtRisk) ExitCode() int { return 2 }

// newMirrorPlanCmd is `mirror plan`: the dry run of `mirror stop`.
func newMirrorPlanCmd(client func() *adminclient.Client, asJSON *bool) *cobra.Command {
	var tf topicFlags
	var all bool
	c := &cobra.Command{
		Use:   "plan NAME --topics T|PATTERN[,…] | --all-topics",
		Short: "Dry run of stop: what a failover now would truncate and lose, per partition (exits 2 when data is at risk)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !tf.given() && !all {
				return fmt.Errorf("name the topics with --topics, or --all-topics")
			}
			if tf.given() && all {
				return fmt.Errorf("--topics and --all-topics exclude each other")
			}
			pl, err := client().PlanMirrorTopics(cmd.Context(), args[0], tf.request())
			if err != nil {
				return err
			}
			if *asJSON {
				err = printJSON(cmd.OutOrStdout(), pl)
			} else {
				fmt.Fprint(cmd.OutOrStdout(), matchNote(pl.Match))
				err = printPlan(cmd.OutOrStdout(), pl)
			}
			if err != nil {
				return err
			}
			if pl.AtRisk {
				cmd.SilenceUsage = true
				return errAtRisk{pl}
			}
			return nil
		},
	}
	tf.register(c, "topics the failover would stop (resolved against the mirror's topics, as stop resolves them)", false)
	c.Flags().BoolVar(&all, "all-topics", false, "all of the mirror's topics")
	return c
}

func printPlan(w io.Writer, pl mirror.Plan) error {
	fmt.Fprintf(w, "failover plan for mirror %s (dry run: nothing changed)\n", pl.Mirror)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tSTATE\tSOURCE HW\tSOURCE LSO\tSEEN AGO\tLOCAL END\tLOCAL LSO\tTRUNCATE\tOPEN TXNS\tMISSING\tLOST RECORDS\tUNCOMMITTED\tRPO MS\tSTART WOULD CUT")
	for _, p := range pl.Partitions {
		seen := "never"
		if p.SourceSeenAt > 0 {
			seen = fmt.Sprintf("%dms", p.SourceSeenAgoMillis)
		}
		missing := fmt.Sprint(p.MissingRecords)
		if p.Unknown {
			missing = "unknown"
		}
		lost := fmt.Sprint(p.LostRecords)
		switch {
		case p.LostRecords < 0:
			lost = "unknown"
		case !p.ScanComplete:
			lost = "≥" + lost
		}
		state, cut := string(p.State), "-"
		if state == "" {
			state = "NOT MIRRORED"
		}
		switch {
		case p.DivergenceTruncate < 0:
			cut = "unknown"
		case p.DivergenceCut >= 0:
			cut = fmt.Sprintf("%d (at %d)", p.DivergenceTruncate, p.DivergenceCut)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%d (%d txns)\t%d\t%s\n", p.Topic, p.Partition, state, p.SourceHighWatermark,
			p.SourceLastStable, seen, p.LocalLogEndOffset, p.LocalLastStable, p.WouldTruncate, p.OpenTransactions, missing, lost,
			p.UncommittedRecords, p.UncommittedTransactions, p.RPOMillis, cut)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(pl.Groups) > 0 {
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tSTATE\tACTIVE HERE\tLAST OFFSET SYNC")
		for _, g := range pl.Groups {
			sync := "never"
			if g.LastSyncAgoMillis >= 0 {
				sync = fmt.Sprintf("%dms ago", g.LastSyncAgoMillis)
			}
			fmt.Fprintf(tw, "%s\t%s\t%v\t%s\n", g.Group, g.State, g.Active, sync)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, p := range pl.Partitions {
		if p.SourceError != "" {
			fmt.Fprintf(w, "%s-%d: source: %s\n", p.Topic, p.Partition, p.SourceError)
		}
	}
	fmt.Fprintf(w, "total: truncate %d offsets (%d open transactions), missing %d offsets; lost %d records, %d uncommitted (%d transactions), RPO %d ms; a start would cut %d; at risk %v\n",
		pl.WouldTruncate, pl.OpenTransactions, pl.MissingRecords, pl.LostRecords, pl.UncommittedRecords, pl.UncommittedTransactions,
		pl.RPOMillis, pl.DivergenceTruncate, pl.AtRisk)
	return printModes(w, pl)
}

// printModes is the plan's failover modes side by side (the mirror's
// marked): what the choice of mirror.failover.mode costs.
func printModes(w io.Writer, pl mirror.Plan) error {
	if len(pl.Modes) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FAILOVER MODE	BASIS	TRUNCATE	ABORT TXNS	LOST RECORDS	UNCOMMITTED	RPO MS")
	for _, ml := range pl.Modes {
		name := string(ml.Mode)
		if ml.Mode == pl.FailoverMode {
			name += " (this mirror's)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", name, ml.Basis, ml.Truncate, ml.AbortTransactions, ml.LostRecords, ml.UncommittedRecords, ml.RPOMillis)
	}
	return tw.Flush()
}
