package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/minibroker/minibroker/internal/adminclient"
	"github.com/minibroker/minibroker/internal/mirror"
)

// newMirrorStartCmd is `mirror start`: it prints, per partition, what
// aligning the local logs with the source cuts, and the broker refuses to
// cut data unless --allow-truncate is given; --dry-run only reports.
func newMirrorStartCmd(client func() *adminclient.Client, asJSON *bool) *cobra.Command {
	var tf topicFlags
	var allowTruncate, dryRun bool
	c := &cobra.Command{
		Use:   "start NAME [--topics T|PATTERN[,…] [--exclude PATTERN[,…]]] [--dry-run] [--allow-truncate]",
		Short: "Start mirroring topics (creates them locally, read-only); refuses to cut local data without --allow-truncate",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(tf.exclude) > 0 && !tf.given() {
				return errors.New("--exclude needs --topics (a start without topics follows mirror.topics.include and mirror.topics.exclude)")
			}
			req := tf.request()
			req.AllowTruncate = allowTruncate
			w := cmd.OutOrStdout()
			if dryRun {
				rep, err := client().StartMirrorDryRun(cmd.Context(), args[0], req)
				if err != nil {
					return err
				}
				if *asJSON {
					return printJSON(w, rep)
				}
				fmt.Fprint(w, matchNote(rep.Match))
				return printStartReport(w, rep)
			}
			st, err := client().StartMirror(cmd.Context(), args[0], req)
			var refused *adminclient.TruncateRefusedError
			if errors.As(err, &refused) {
				if *asJSON {
					printJSON(w, refused.Report)
				} else {
					fmt.Fprint(w, matchNote(refused.Report.Match))
					printStartReport(w, refused.Report)
				}
			}
			if err != nil {
				return err
			}
			if *asJSON {
				return printJSON(w, st)
			}
			fmt.Fprint(w, matchNote(st.Match))
			if st.Start != nil && len(st.Start.Partitions) > 0 {
				printStartReport(w, *st.Start)
			}
			return printStatus(w, st, false)
		},
	}
	tf.register(c, "topics to mirror (none: every source topic mirror.topics.include/exclude select, now and as they appear)", true)
	c.Flags().BoolVar(&allowTruncate, "allow-truncate", false, "cut local data past where it diverges from the source (failback)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print what the start would cut and change nothing")
	return c
}

// printStartReport prints a start's truncation report.
func printStartReport(w io.Writer, rep mirror.StartReport) error {
	switch {
	case len(rep.Partitions) == 0:
		fmt.Fprintf(w, "mirror %s: no local data to cut; the start keeps every local record\n", rep.Mirror)
		return nil
	case rep.DryRun:
		fmt.Fprintf(w, "mirror %s (dry run, nothing changed): aligning with the source would cut\n", rep.Mirror)
	case rep.Refused:
		fmt.Fprintf(w, "mirror %s: REFUSED, nothing changed; aligning with the source would cut\n", rep.Mirror)
	default:
		fmt.Fprintf(w, "mirror %s: aligning with the source cuts\n", rep.Mirror)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tSTATE\tLOCAL START\tLOCAL END\tTRUNCATE TO\tOFFSETS\tRECORDS\tMARKERS\tBARRIERS")
	for _, p := range rep.Partitions {
		state := string(p.State)
		if state == "" {
			state = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", p.Topic, p.Partition, state, p.LocalLogStart, p.LocalLogEnd,
			p.TruncateTo, p.Offsets, p.Records, p.Markers, p.Barriers)
	}
	tw.Flush()
	fmt.Fprintf(w, "total: %d records, %d transaction markers, %d barriers\n", rep.Records, rep.Markers, rep.Barriers)
	if rep.Refused && rep.DryRun {
		fmt.Fprintln(w, "the start would be refused without --allow-truncate")
	}
	return nil
}
