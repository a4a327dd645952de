package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"
)

// sample is one scrape of one cluster's /metrics, a line of the samples file.
type sample struct {
	Ms      int64   `json:"t"`
	Round   int     `json:"round"` // one scrape of every target
	Cluster string  `json:"cluster"`
	Up      bool    `json:"up"`
	LogEnd  float64 `json:"log_end"` // minibroker_partition_log_end_offset, summed over the topic
	Lag     float64 `json:"lag"`     // minibroker_mirror_lag_records, summed over the topic
}

func newTimelineCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "timeline", Short: "Record the clusters' metrics during the demo and draw them as an SVG"}
	var (
		targets         []string
		out, topic      string
		interval        time.Duration
		samples, events string
		title           string
	)
	record := &cobra.Command{
		Use:   "record --target NAME=URL … --out FILE",
		Short: "Scrape each target's /metrics every --interval until SIGTERM; one JSON line per scrape",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return recordTimeline(ctx, targets, topic, interval, out)
		},
	}
	record.Flags().StringSliceVar(&targets, "target", nil, "NAME=http://HOST:PORT/metrics (repeatable)")
	record.Flags().StringVar(&out, "out", "", "samples file")
	record.Flags().StringVar(&topic, "topic", "demo", "topic")
	record.Flags().DurationVar(&interval, "interval", 250*time.Millisecond, "scrape interval")
	render := &cobra.Command{
		Use:   "render --samples FILE --events FILE --out FILE.svg",
		Short: "Draw records/s and mirror lag per cluster, with the demo's events, as an SVG",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return renderTimeline(samples, events, out, title)
		},
	}
	render.Flags().StringVar(&samples, "samples", "", "samples file from record")
	render.Flags().StringVar(&events, "events", "", "events file (UNIX_MS label)")
	render.Flags().StringVar(&out, "out", "", "SVG file to write")
	render.Flags().StringVar(&title, "title", "minibroker failover demo", "title")
	cmd.AddCommand(record, render)
	return cmd
}

func recordTimeline(ctx context.Context, targets []string, topic string, interval time.Duration, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	defer bw.Flush()
	enc := json.NewEncoder(bw)
	hc := &http.Client{Timeout: 2 * time.Second} // a loaded machine answers late; a late sample beats a gap
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for round := 0; ; round++ {
		for _, t := range targets {
			name, url, _ := strings.Cut(t, "=")
			s := sample{Ms: time.Now().UnixMilli(), Round: round, Cluster: name}
			if fams, err := scrape(hc, url); err == nil {
				s.Up = true
				s.LogEnd = sumFor(fams["minibroker_partition_log_end_offset"], topic)
				s.Lag = sumFor(fams["minibroker_mirror_lag_records"], topic)
			}
			enc.Encode(s)
		}
		bw.Flush()
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func scrape(hc *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// sumFor adds the family's gauge values whose topic label is topic.
func sumFor(fam *dto.MetricFamily, topic string) float64 {
	if fam == nil {
		return 0
	}
	var sum float64
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "topic" && l.GetValue() == topic {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// newMetricCmd prints one gauge of one broker's /metrics, summed over the
// topic's partitions: the demo shows a's log end while b cannot see a.
func newMetricCmd() *cobra.Command {
	var url, name, topic string
	cmd := &cobra.Command{
		Use:   "metric --url URL --name METRIC",
		Short: "Print a gauge from a broker's /metrics, summed over the topic's partitions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fams, err := scrape(&http.Client{Timeout: 5 * time.Second}, url)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%.0f\n", sumFor(fams[name], topic))
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "", "http://HOST:PORT/metrics")
	cmd.Flags().StringVar(&name, "name", "minibroker_partition_log_end_offset", "metric")
	cmd.Flags().StringVar(&topic, "topic", "demo", "topic")
	return cmd
}
