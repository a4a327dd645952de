package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

func newCheckLogsCmd() *cobra.Command {
	var sameEnd bool
	cmd := &cobra.Command{
		Use:   "check-logs SOURCE.jsonl MIRROR.jsonl",
		Short: "Compare two partitions' `dump-log --json --print-data`: same batches byte for byte, no gap, no second copy",
		Long: `Compare the batches of two dumps of the same partition on two clusters
(minibroker dump-log --json --print-data DIR). Every offset the two logs
share must hold the same batch (base and last offset, size, CRC-32C — which
covers producer id, epoch, sequence and the records — and leader epoch).
Neither log may have a hole between batches or a second copy of a producer
batch (same producer id, epoch and base sequence since the last
MIRROR_PID_RESET barrier). With --same-end the logs must also end at the
same offset (the mirror caught up). Exit 1 when any of that fails.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return checkLogs(cmd.OutOrStdout(), args[0], args[1], sameEnd)
		},
	}
	cmd.Flags().BoolVar(&sameEnd, "same-end", false, "the logs must end at the same offset")
	return cmd
}

func checkLogs(w io.Writer, srcPath, dstPath string, sameEnd bool) error {
	src, err := readDump(srcPath)
	if err != nil {
		return err
	}
	dst, err := readDump(dstPath)
	if err != nil {
		return err
	}
	var problems []string
	byBase := map[int64]dumpBatch{}
	for _, b := range src {
		byBase[b.BaseOffset] = b
	}
	compared := 0
	for _, b := range dst {
		s, ok := byBase[b.BaseOffset]
		if !ok {
			if len(src) > 0 && b.BaseOffset < src[len(src)-1].LastOffset && b.BaseOffset >= src[0].BaseOffset {
				problems = append(problems, fmt.Sprintf("mirror batch at %d has no batch at the same offset in the source", b.BaseOffset))
			}
			continue
		}
		compared++
		if s.identity() != b.identity() || s.ProducerID != b.ProducerID || s.BaseSequence != b.BaseSequence {
			problems = append(problems, fmt.Sprintf("batch at %d differs: source %s, mirror %s", b.BaseOffset, s.identity(), b.identity()))
		}
	}
	sf, df := examine(src), examine(dst)
	for _, side := range []struct {
		name string
		f    logFacts
	}{{"source", sf}, {"mirror", df}} {
		for _, g := range side.f.Gaps {
			problems = append(problems, side.name+" log: gap, "+g)
		}
		for _, d := range side.f.SecondCopy {
			problems = append(problems, side.name+" log: second copy of "+d)
		}
		if side.f.BadCRC > 0 {
			problems = append(problems, fmt.Sprintf("%s log: %d batches fail their CRC", side.name, side.f.BadCRC))
		}
	}
	if sameEnd && sf.End != df.End {
		problems = append(problems, fmt.Sprintf("the mirror ends at %d, the source at %d", df.End, sf.End))
	}
	fmt.Fprintf(w, "source %s: %d batches, %d records, end %d\n", srcPath, sf.Batches, sf.Records, sf.End)
	fmt.Fprintf(w, "mirror %s: %d batches, %d records, end %d\n", dstPath, df.Batches, df.Records, df.End)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(w, "  PROBLEM:", p)
		}
		return fmt.Errorf("%d problems", len(problems))
	}
	fmt.Fprintf(w, "  %d batches at the same offsets are identical (offsets, size, CRC-32C, leader epoch); no gap; no second copy of any batch\n", compared)
	return nil
}
