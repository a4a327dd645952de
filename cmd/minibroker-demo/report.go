package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func newReportCmd() *cobra.Command {
	var dir, logPath string
	cmd := &cobra.Command{
		Use:   "report --dir DIR --log FINAL.jsonl",
		Short: "The demo's closing report: acknowledged, read by the group, lost, duplicated, failover times; exit 1 on loss or duplication",
		Long: `Read the ledgers in DIR (produce-*.json and consume-*.json, one JSON object
each, as produce and consume print them), the final log (dump-log --json
--print-data of the partition on the cluster that ends as primary) and
DIR/events.txt ("UNIX_MS label" lines; a label starting "mirror stop"
marks a failover). Exit 1 when an acknowledged record is missing from the
final log or from what the group read, when a numbered record is stored
twice or read twice, or when a stray record (written to a cluster after
it was failed over from) survived the failback.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return report(cmd.OutOrStdout(), dir, logPath)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory of ledgers and events.txt")
	cmd.Flags().StringVar(&logPath, "log", "", "dump-log --json --print-data of the final log")
	cmd.MarkFlagRequired("dir")
	cmd.MarkFlagRequired("log")
	return cmd
}

type event struct {
	ms    int64
	label string
}

func readEvents(path string) ([]event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ms, label, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil {
			continue
		}
		out = append(out, event{n, label})
	}
	return out, sc.Err()
}

func readLedgers[T any](pattern string) ([]T, []string, error) {
	files, _ := filepath.Glob(pattern)
	sort.Strings(files)
	var out []T
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, nil, fmt.Errorf("%s: %w (a client that did not finish?)", f, err)
		}
		out = append(out, v)
	}
	return out, files, nil
}

func report(w io.Writer, dir, logPath string) error {
	prods, _, err := readLedgers[producerLedger](filepath.Join(dir, "produce-*.json"))
	if err != nil {
		return err
	}
	cons, _, err := readLedgers[consumerLedger](filepath.Join(dir, "consume-*.json"))
	if err != nil {
		return err
	}
	events, err := readEvents(filepath.Join(dir, "events.txt"))
	if err != nil {
		return err
	}
	batches, err := readDump(logPath)
	if err != nil {
		return err
	}
	final := examine(batches)

	acked, read := numbers{}, numbers{}
	stray := 0
	for _, p := range prods {
		if p.Prefix != "" {
			stray += p.AckedCount
			continue
		}
		acked.addAll(fromRanges(p.Acked))
	}
	twice := 0
	for _, c := range cons {
		read.addAll(fromRanges(c.Read))
		twice += len(c.ReadTwice)
	}
	lost := acked.missingFrom(final.Values)
	unread := acked.missingFrom(read)
	stored2 := final.Values.repeated()
	read2 := read.repeated()

	fmt.Fprintf(w, "records acknowledged to the producer:     %d (%d producer runs)\n", len(acked), len(prods))
	fmt.Fprintf(w, "records read by the group:                %d (%d consumer runs)\n", len(read), len(cons))
	fmt.Fprintf(w, "numbered records in the final log:        %d (offsets 0..%d, %d MIRROR_PID_RESET barriers)\n", len(final.Values), final.End-1, len(final.Barriers))
	fmt.Fprintf(w, "gaps: acknowledged, not in the log:       %s\n", brief(lost))
	fmt.Fprintf(w, "gaps: acknowledged, never read:           %s\n", brief(unread))
	fmt.Fprintf(w, "duplicates: stored twice in the log:      %s\n", brief(stored2))
	fmt.Fprintf(w, "duplicates: read twice by the group:      %s\n", brief(read2))
	fmt.Fprintf(w, "stray records acknowledged after a cut:   %d, still in the final log: %d\n", stray, final.OtherValues)
	for i, e := range events {
		if !strings.HasPrefix(e.label, "mirror stop") {
			continue
		}
		if i+1 < len(events) && strings.HasSuffix(events[i+1].label, "writable") {
			fmt.Fprintf(w, "%s: returned, %s, after %d ms\n", e.label, events[i+1].label, events[i+1].ms-e.ms)
		}
		first := int64(0)
		for _, p := range prods {
			if p.Prefix == "" && p.StartMs >= e.ms && p.FirstAckMs > 0 && (first == 0 || p.FirstAckMs < first) {
				first = p.FirstAckMs
			}
		}
		if first > 0 {
			fmt.Fprintf(w, "%s → first record acknowledged there: %d ms (the producer's container starts in between)\n", e.label, first-e.ms)
		}
	}
	bad := len(lost) + len(unread) + len(stored2) + len(read2) + twice + final.OtherValues + len(final.Gaps) + len(final.SecondCopy)
	if len(acked) == 0 {
		return fmt.Errorf("nothing was acknowledged: the demo did not run")
	}
	if bad > 0 {
		fmt.Fprintln(w, "RESULT: FAILED")
		return fmt.Errorf("acknowledged records lost or duplicated")
	}
	fmt.Fprintln(w, "RESULT: every acknowledged record is in the log once and was read by the group once")
	return nil
}
