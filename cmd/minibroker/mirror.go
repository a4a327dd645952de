package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/minibroker/minibroker/internal/adminclient"
	"github.com/minibroker/minibroker/internal/mirror"
)

// newMirrorCmd is the operator surface for mirrors; every subcommand talks
// to a broker's admin API (--admin) and prints text for a person, or the
// admin API's JSON with --json.
func newMirrorCmd() *cobra.Command {
	var admin adminFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "mirror",
		Short: "Manage cluster mirrors on a broker (create, start, stop = failover, …)",
	}
	admin.register(cmd)
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print the admin API's JSON instead of text")
	client := admin.client

	var source []string
	var clientID string
	var groupsInclude, groupsExclude []string
	var noCheck bool
	var srcCfg sourceConfigFlags
	var mirrorCfg mirrorConfigFlags
	create := &cobra.Command{
		Use: "create NAME --source HOST:PORT[,…]", Short: "Define a mirror of a source cluster (checks the source first)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			settings, err := srcCfg.settings()
			if err != nil {
				return err
			}
			mcfg, err := mirrorCfg.settings()
			if err != nil {
				return err
			}
			st, err := client().CreateMirror(cmd.Context(), mirror.CreateRequest{Name: args[0], Source: source, ClientID: clientID, Config: mcfg,
				GroupsInclude: groupsInclude, GroupsExclude: groupsExclude, NoCheck: noCheck, SourceConfig: settings})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			cluster := "not checked (--no-check)"
			if !noCheck {
				cluster = st.SourceClusterID
				if cluster == "" {
					cluster = "none (the source's Metadata has no cluster id)"
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created mirror %s\nsource          %s\nsource cluster  %s\n", st.Name, strings.Join(st.Source, ","), cluster)
			return nil
		},
	}
	create.Flags().StringSliceVar(&source, "source", nil, "source bootstrap servers")
	create.Flags().StringVar(&clientID, "client-id", "", "client id used at the source")
	create.Flags().StringSliceVar(&groupsInclude, "groups-include", nil, "regexps of source groups whose offsets are synced (default: all)")
	create.Flags().StringSliceVar(&groupsExclude, "groups-exclude", nil, "regexps of source groups not synced")
	create.Flags().BoolVar(&noCheck, "no-check", false, "do not connect to the source before creating the mirror")
	srcCfg.register(create)
	mirrorCfg.register(create, false)
	create.MarkFlagRequired("source")

	var alterCfg sourceConfigFlags
	var alterMirrorCfg mirrorConfigFlags
	alter := &cobra.Command{
		Use: "alter NAME [--mirror-config KEY=VALUE …] [--source-config KEY=VALUE … | --source-config-file FILE]", Args: cobra.ExactArgs(1),
		Short: "Change a mirror's settings (those named) or replace its source security settings and reconnect (partitions FAILED on them restart)",
		RunE: func(cmd *cobra.Command, args []string) error {
			srcGiven := len(alterCfg.pairs) > 0 || alterCfg.file != ""
			if !srcGiven && !alterMirrorCfg.given() {
				return fmt.Errorf("give --mirror-config/--mirror-config-reset (the settings named change), or --source-config/--source-config-file (they replace all the old source settings)")
			}
			var st mirror.Status
			if alterMirrorCfg.given() {
				mcfg, err := alterMirrorCfg.settings()
				if err != nil {
					return err
				}
				if st, err = client().AlterMirrorConfig(cmd.Context(), args[0], mirror.ConfigRequest{Config: mcfg, Reset: alterMirrorCfg.reset}); err != nil {
					return err
				}
			}
			if srcGiven {
				settings, err := alterCfg.settings()
				if err != nil {
					return err
				}
				if st, err = client().AlterSourceConfig(cmd.Context(), args[0], mirror.SourceConfigRequest{SourceConfig: settings}); err != nil {
					return err
				}
			}
			return printStatus(cmd.OutOrStdout(), st, asJSON)
		},
	}
	alterCfg.register(alter)
	alterMirrorCfg.register(alter, true)

	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a mirror whose partitions are stopped", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client().DeleteMirror(cmd.Context(), args[0]); err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]string{"deleted": args[0]})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted mirror %s\n", args[0])
			return nil
		},
	}
	var namesOnly bool
	list := &cobra.Command{
		Use: "list [--names]", Short: "List mirrors: name, topics, source cluster id, source bootstrap servers", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			if namesOnly {
				names, err := client().MirrorNames(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(w, names)
				}
				for _, n := range names {
					fmt.Fprintln(w, n)
				}
				return nil
			}
			mirrors, err := client().ListMirrors(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(w, mirrors)
			}
			return printMirrorList(w, mirrors)
		},
	}
	list.Flags().BoolVarP(&namesOnly, "names", "q", false, "print the mirrors' names only, one a line (for scripts)")
	var failedOnly bool
	describe := &cobra.Command{
		Use: "describe NAME [--failed]", Short: "Show a mirror's partitions: state, offsets, lag (--failed: the FAILED ones, their retries and error)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := client().DescribeMirror(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if failedOnly {
				return printFailed(cmd.OutOrStdout(), st, asJSON)
			}
			return printStatus(cmd.OutOrStdout(), st, asJSON)
		},
	}
	describe.Flags().BoolVar(&failedOnly, "failed", false, "only the FAILED partitions: retries done/max, next retry, and the error")
	cmd.AddCommand(create, alter, del, list, describe, newMirrorPlanCmd(client, &asJSON))

	cmd.AddCommand(newMirrorStartCmd(client, &asJSON), newMirrorStopCmd(client, &asJSON))
	for _, action := range []struct {
		name, short string
		call        func(c *adminclient.Client, ctx context.Context, name string, req mirror.TopicsRequest) (mirror.Status, error)
	}{
		{"pause", "Pause fetching for topics", (*adminclient.Client).PauseMirror},
		{"resume", "Resume fetching for topics", (*adminclient.Client).ResumeMirror},
	} {
		var tf topicFlags
		c := &cobra.Command{
			Use: action.name + " NAME [--topics T|PATTERN[,…]]", Short: action.short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				st, err := action.call(client(), cmd.Context(), args[0], tf.request())
				if err != nil {
					return err
				}
				if !asJSON {
					fmt.Fprint(cmd.OutOrStdout(), matchNote(st.Match))
				}
				return printStatus(cmd.OutOrStdout(), st, asJSON)
			},
		}
		tf.register(c, "topics (all of the mirror's when none)", false)
		cmd.AddCommand(c)
	}
	return cmd
}

// printMirrorList prints `mirror list`: one mirror a line.
func printMirrorList(w io.Writer, mirrors []mirror.Summary) error {
	if len(mirrors) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MIRROR\tTOPICS\tSOURCE CLUSTER ID\tSOURCE BOOTSTRAP")
	for _, m := range mirrors {
		topics := strings.Join(m.Topics, ",")
		if m.AutoTopics {
			topics = strings.TrimPrefix(topics+",+"+mirror.SettingTopicsInclude, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, cmp.Or(topics, "-"), cmp.Or(m.SourceClusterID, "-"), strings.Join(m.Source, ","))
	}
	return tw.Flush()
}

// printFailed is `mirror describe --failed`: the FAILED partitions, their
// retries (done in a row, of mirror.failed.retry.max.attempts), when the
// next is due, and the error.
func printFailed(w io.Writer, st mirror.Status, asJSON bool) error {
	failed := st
	failed.Partitions = []mirror.PartitionStatus{}
	for _, p := range st.Partitions {
		if p.State == mirror.Failed {
			failed.Partitions = append(failed.Partitions, p)
		}
	}
	if asJSON {
		return printJSON(w, failed)
	}
	if len(failed.Partitions) == 0 {
		fmt.Fprintf(w, "mirror %s: no FAILED partition (of %d)\n", st.Name, len(st.Partitions))
		return nil
	}
	fmt.Fprintf(w, "mirror %s: %d of %d partitions FAILED\n", st.Name, len(failed.Partitions), len(st.Partitions))
	maxAttempts := cmp.Or(st.Config[mirror.SettingFailedRetryMaxAttempts], "?")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tRETRIES\tNEXT RETRY\tERROR")
	for _, p := range failed.Partitions {
		retries, next := fmt.Sprintf("%d/%s", p.Retries, maxAttempts), "-"
		switch {
		case !p.Retriable:
			next = "never: not retriable (mirror start, or alter the source settings)"
		case p.NextRetryAt > 0:
			next = "in " + max(time.Until(time.UnixMilli(p.NextRetryAt)), 0).Round(time.Millisecond).String()
		default:
			next = "none: attempts used up (mirror start)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", p.Topic, p.Partition, retries, next, p.Reason)
	}
	return tw.Flush()
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printStatus(w io.Writer, st mirror.Status, asJSON bool) error {
	if asJSON {
		return printJSON(w, st)
	}
	fmt.Fprintf(w, "mirror %s  source %s  source cluster %s\n", st.Name, strings.Join(st.Source, ","), st.SourceClusterID)
	if len(st.SourceConfig) > 0 {
		keys := make([]string, 0, len(st.SourceConfig))
		for k := range st.SourceConfig {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			keys[i] = k + "=" + st.SourceConfig[k] // secrets arrive as [hidden]
		}
		fmt.Fprintf(w, "source config  %s\n", strings.Join(keys, " "))
	}
	if len(st.Config) > 0 {
		keys := make([]string, 0, len(st.Config))
		for k := range st.Config {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintln(w, "settings")
		for _, k := range keys {
			fmt.Fprintf(w, "  %s=%s\n", k, st.Config[k]) // secrets arrive as [hidden]
		}
	}
	if st.AutoTopics {
		fmt.Fprintln(w, "topics         every source topic mirror.topics.include/exclude select (new ones within mirror.metadata.refresh.interval.ms)")
	}
	skipped := make([]string, 0, len(st.SkippedTopics))
	for t := range st.SkippedTopics {
		skipped = append(skipped, t)
	}
	sort.Strings(skipped)
	for _, t := range skipped {
		fmt.Fprintf(w, "not mirrored   %s: %s\n", t, st.SkippedTopics[t])
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tSTATE\tLOCAL END\tSOURCE HW\tLAG\tLAG MS\tLAST MIRRORED\tBARRIER\tLOST AT FAILOVER\tFETCH ERRORS\tRETRIES\tNOTE")
	now := time.Now()
	for _, p := range st.Partitions {
		note := p.Reason
		if note == "" && p.WaitingForSourceLSOSince > 0 {
			since := time.UnixMilli(p.WaitingForSourceLSOSince)
			note = fmt.Sprintf("waiting for source LSO %d, open transaction since %s (%s)", p.SourceLastStable,
				since.UTC().Format(time.RFC3339), now.Sub(since).Round(time.Second))
		}
		if note == "" && p.LastError != "" {
			seen := "never answered"
			if p.SourceSeenAtMs > 0 {
				seen = "last answer " + now.Sub(time.UnixMilli(p.SourceSeenAtMs)).Round(time.Second).String() + " ago"
			}
			note = fmt.Sprintf("source unreachable (%s): %s", seen, p.LastError)
		}
		lag := fmt.Sprint(p.LagRecords)
		switch {
		case p.LagRecords < 0:
			lag = "?" // the source never answered
		case p.SourceUnreachable:
			lag += "?" // the last known lag
		}
		if p.NextRetryAt > 0 {
			note += fmt.Sprintf(" (retry %d in %s)", p.Retries+1, max(time.Until(time.UnixMilli(p.NextRetryAt)), 0).Round(time.Millisecond))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", p.Topic, p.Partition, p.State, p.LocalLogEndOffset,
			p.SourceHighWater, lag, p.LagMillis, p.LastMirroredOffset, p.BarrierOffset, p.LostAtFailover, p.FetchErrors, p.Retries, note)
	}
	return tw.Flush()
}
