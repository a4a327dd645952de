package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/minibroker/minibroker/internal/adminclient"
	"github.com/minibroker/minibroker/internal/mirror"
)

// errNotStopped is `mirror stop --wait`'s failure: partitions that are not
// STOPPED when it returns (a step failed, or the timeout passed). The
// command exits 3 (1 stays for a stop that could not begin).
type errNotStopped struct{ msg string }

func (e errNotStopped) Error() string { return e.msg }
func (errNotStopped) ExitCode() int   { return 3 }

// newMirrorStopCmd is `mirror stop`, the failover. It names its topics or
// says --all-topics (never every topic by omission). It returns once
// STOPPING is persisted for them (the failover is then committed: a crash
// resumes it) and the steps go on in the broker; with --wait it returns
// when every partition of them is STOPPED, or lists those that are not and
// exits 3.
func newMirrorStopCmd(client func() *adminclient.Client, asJSON *bool) *cobra.Command {
	var tf topicFlags
	var allTopics, wait bool
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "stop NAME (--topics T|PATTERN[,…] | --all-topics) [--wait [--timeout D]]",
		Short: "Fail over: stop mirroring topics, write the barrier, make them writable (--wait: until all are STOPPED)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !tf.given() && !allTopics {
				return errors.New("name the topics to fail over with --topics, or give --all-topics")
			}
			if tf.given() && allTopics {
				return errors.New("--topics and --all-topics are exclusive")
			}
			if timeout <= 0 {
				return errors.New("--timeout must be positive")
			}
			req := tf.request()
			req.AllTopics, req.Wait = allTopics, wait
			if wait {
				req.TimeoutMs = timeout.Milliseconds()
			}
			w := cmd.OutOrStdout()
			st, err := client().StopMirror(cmd.Context(), args[0], req)
			var inc *adminclient.StopIncompleteError
			if errors.As(err, &inc) {
				if *asJSON {
					printJSON(w, map[string]any{"error": inc.Err.Message, "stop": inc.Stop})
				} else {
					printNotStopped(w, inc.Stop)
				}
				return errNotStopped{msg: inc.Error()}
			}
			if err != nil {
				return err
			}
			if !*asJSON {
				fmt.Fprint(w, matchNote(st.Match))
			}
			if err := printStatus(w, st, *asJSON); err != nil || *asJSON || st.Stop == nil {
				return err
			}
			if res := st.Stop; res.Waited {
				fmt.Fprintf(w, "failover complete: %d of %d partitions STOPPED\n", res.Stopped, res.Partitions)
			} else {
				fmt.Fprintf(w, "failover begun: %d of %d partitions STOPPED so far, the others STOPPING; "+
					"`mirror describe` follows it (or stop with --wait)\n", res.Stopped, res.Partitions)
			}
			return nil
		},
	}
	tf.register(c, "topics to fail over", false)
	c.Flags().BoolVar(&allTopics, "all-topics", false, "fail over every topic of the mirror")
	c.Flags().BoolVar(&wait, "wait", false, "return when every partition is STOPPED; else list those that are not and exit 3")
	c.Flags().DurationVar(&timeout, "timeout", time.Minute, "with --wait: how long to wait for STOPPED")
	return c
}

// printNotStopped lists the partitions a stop --wait left not STOPPED.
func printNotStopped(w io.Writer, res mirror.StopResult) {
	why := "a failover step failed"
	if !res.Waited {
		why = "timed out; the steps go on in the broker"
	}
	fmt.Fprintf(w, "failover incomplete (%s): %d of %d partitions STOPPED; not STOPPED:\n", why, res.Stopped, res.Partitions)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tSTATE\tREASON")
	for _, p := range res.NotStopped {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", p.Topic, p.Partition, p.State, p.Reason)
	}
	tw.Flush()
}
