package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/minibroker/minibroker/internal/logtool"
)

// Exit statuses of dump-log and verify-log (main's generic 1 does not
// apply: these commands exit themselves).
const (
	exitOK       = 0
	exitFindings = 1 // verify-log: findings; dump-log: damage or failed --deep checks
	exitUsage    = 2 // usage or I/O error
)

// usageExit makes cobra's flag and argument errors exit with exitUsage.
func usageExit(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		fmt.Fprintf(c.ErrOrStderr(), "error: %v\n%s", err, c.UsageString())
		os.Exit(exitUsage)
		return nil
	})
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			fmt.Fprintf(c.ErrOrStderr(), "error: at least one PATH is required\n%s", c.UsageString())
			os.Exit(exitUsage)
		}
		return nil
	}
}

func newDumpLogCmd() *cobra.Command {
	var opts logtool.Options
	cmd := &cobra.Command{
		Use:   "dump-log [--print-data] [--deep] [--json] PATH…",
		Short: "Print log segments, indexes, producer snapshots and checkpoints (like kafka-dump-log.sh)",
		Long: `Print the files of a partition directory: record batches of .log segments
(control records decoded: COMMIT/ABORT with their coordinator epoch,
MIRROR_PID_RESET with its version and source cluster id, unknown types as hex),
.index/.timeindex/.txnindex entries, producer snapshots and checkpoint files.
A directory is dumped whole, in offset order. Files are opened read-only and
never locked: a running broker's data directory can be dumped.

Exit status: 0; 1 when damage was found or a --deep check failed; 2 on usage
or I/O errors.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := runDumpLog(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, opts); code != exitOK {
				os.Exit(code)
			}
			return nil
		},
	}
	usageExit(cmd)
	cmd.Flags().BoolVar(&opts.PrintData, "print-data", false, "print every record's key, value and headers (decompressing batches)")
	cmd.Flags().BoolVar(&opts.OffsetsDecoder, "offsets-decoder", false, "decode __consumer_offsets records as kafka-dump-log --offsets-decoder does (implies --print-data)")
	cmd.Flags().BoolVar(&opts.TransactionLogDecoder, "transaction-log-decoder", false, "decode __transaction_state records as kafka-dump-log --transaction-log-decoder does (implies --print-data)")
	cmd.Flags().BoolVar(&opts.ShareGroupStateDecoder, "share-group-state-decoder", false, "decode __share_group_state records (ShareSnapshot, ShareUpdate) as kafka-dump-log --share-group-state-decoder does (implies --print-data)")
	cmd.Flags().BoolVar(&opts.MirrorStateDecoder, "mirror-state-decoder", false, "decode __mirror_state records (minibroker's own layout, internal/mirror/staterec) in the form of kafka-dump-log's decoders (implies --print-data)")
	cmd.Flags().BoolVar(&opts.Deep, "deep", false, "check index entries against the log and snapshots against a replay of the log")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON object per line (batch, index entry, snapshot producer, …)")
	cmd.Flags().IntVar(&opts.MaxDecompressedBytes, "max-decompressed-bytes", logtool.DefaultMaxDecompressedBytes, "refuse to decompress a batch beyond this size")
	return cmd
}

func runDumpLog(out, errOut io.Writer, paths []string, opts logtool.Options) int {
	d := logtool.NewDumper(out, opts)
	code := exitOK
	for _, p := range paths {
		if err := d.DumpPath(p); err != nil {
			fmt.Fprintf(errOut, "error: %v\n", err)
			code = exitUsage
		}
	}
	if code == exitOK && d.Damaged+d.DeepFailed > 0 {
		fmt.Fprintf(errOut, "dump-log: %d damaged items, %d failed deep checks\n", d.Damaged, d.DeepFailed)
		code = exitFindings
	}
	return code
}
