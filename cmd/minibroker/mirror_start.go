package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/minibroker/minibroker/internal/mirror"
)

// newMirrorStartCmd is `mirror start`: it prints, per partition, what
// aligning the local logs with the source cuts, and the broker refuses to
// cut data unless --allow-truncate is given; --dry-run only reports.
func newMirrorStartCmd(client func() *adminClient, asJSON *bool) *cobra.Command {
	var topics []string
	var allowTruncate, dryRun bool
	c := &cobra.Command{
		Use:   "start NAME [--topics T[,…]] [--dry-run] [--allow-truncate]",
		Short: "Start mirroring topics (creates them locally, read-only); refuses to cut local data without --allow-truncate",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := mirror.TopicsRequest{Topics: topics, AllowTruncate: allowTruncate, DryRun: dryRun}
			w := cmd.OutOrStdout()
			if dryRun {
				var rep mirror.StartReport
				if err := client().do("POST", "/v1/mirrors/"+args[0]+"/start", req, &rep); err != nil {
					return err
				}
				if *asJSON {
					return printJSON(w, rep)
				}
				return printStartReport(w, rep)
			}
			var st mirror.Status
			err := client().do("POST", "/v1/mirrors/"+args[0]+"/start", req, &st)
			var ae *apiError
			if errors.As(err, &ae) && ae.status == http.StatusConflict {
				var body struct {
					Report *mirror.StartReport `json:"report"`
				}
				if json.Unmarshal(ae.body, &body) == nil && body.Report != nil {
					if *asJSON {
						printJSON(w, body.Report)
					} else {
						printStartReport(w, *body.Report)
					}
				}
			}
			if err != nil {
				return err
			}
			if *asJSON {
				return printJSON(w, st)
			}
			if st.Start != nil && len(st.Start.Partitions) > 0 {
				printStartReport(w, *st.Start)
			}
			return printStatus(w, st, false)
		},
	}
	c.Flags().StringSliceVar(&topics, "topics", nil, "topics to mirror (none: every source topic mirror.topics.include/exclude select, now and as they appear)")
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
