package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/minibroker/minibroker/minibrokertest"
)

const prometheusDir = "../../../docker/prometheus"

// The scrape config and the alert rules are valid, and the alerts' unit
// tests (alerts_test.yml: each alert fires on its series and stays silent
// below its threshold or its `for`) pass, with Debian's promtool.
func TestPrometheusRules(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus; `make deps` installs it)")
	}
	for _, args := range [][]string{
		{"check", "config", "prometheus.yml"},
		{"check", "rules", "alerts.yml"},
		{"test", "rules", "alerts_test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = prometheusDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

var metricName = regexp.MustCompile(`\bminibroker_[a-z0-9_]+`)

// monitoringMetricNames returns every minibroker_* name the Grafana
// dashboard's queries and the alert rules use, with where each is used.
func monitoringMetricNames(t *testing.T) map[string][]string {
	t.Helper()
	names := map[string][]string{}
	raw, err := os.ReadFile(filepath.Join(prometheusDir, "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, n := range metricName.FindAllString(tg.Expr, -1) {
				names[n] = append(names[n], "dashboard panel "+p.Title)
			}
		}
	}
	raw, err = os.ReadFile(filepath.Join(prometheusDir, "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			for _, n := range metricName.FindAllString(r.Expr, -1) {
				names[n] = append(names[n], "alert "+r.Alert)
			}
		}
	}
	if len(names) < 10 {
		t.Fatalf("only %d metric names found in the dashboard and the rules: %v", len(names), names)
	}
	return names
}

// exported returns the series names a /metrics page has, histograms with
// their _bucket, _sum and _count.
func exported(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for name, f := range fams {
		if len(f.GetMetric()) == 0 {
			continue
		}
		out[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		}
	}
	return out
}

func missingMetrics(used map[string][]string, have map[string]bool) []string {
	var out []string
	for n, where := range used {
		if !have[n] {
			out = append(out, fmt.Sprintf("%s (used by %s)", n, strings.Join(where, ", ")))
		}
	}
	sort.Strings(out)
	return out
}

// Every metric the Grafana dashboard and the alert rules query is on a
// live broker's /metrics: a destination that mirrored a topic (with group
// offsets), lost its source (fetch errors) and failed over (barrier).
func TestDashboardMetricsExist(t *testing.T) {
	t.Parallel()
	used := monitoringMetricNames(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	a := minibrokertest.Start(t, minibrokertest.Topic("mon", 1), minibrokertest.HTTP())
	b := minibrokertest.Start(t, minibrokertest.HTTP())
	cl := itest.NewClient(t, a.Addr(), kgo.DefaultProduceTopic("mon"))
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "mon", Partition: 0, At: 10, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "mon-group", offs); err != nil {
		t.Fatal(err)
	}
	m := b.Mirror("from-a", a.Addr()).Start("mon")
	m.WaitCaughtUp(30 * time.Second)
	if _, err := b.Broker().Mirrors().SyncGroupOffsets(ctx, "from-a"); err != nil {
		t.Fatal(err)
	}
	// The source goes away: the mirror's fetches fail.
	a.Close()
	for ctx.Err() == nil && !exported(t, "http://"+b.HTTPAddr()+"/metrics")["minibroker_mirror_fetch_errors_total"] {
		time.Sleep(100 * time.Millisecond)
	}
	m.Stop("mon") // failover: the barrier
	// b's own producers: Produce requests on b.
	bcl := itest.NewClient(t, b.Addr(), kgo.DefaultProduceTopic("mon"))
	if err := bcl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	have := exported(t, "http://"+b.HTTPAddr()+"/metrics")
	if missing := missingMetrics(used, have); len(missing) > 0 {
		t.Errorf("the dashboard or the alerts use metrics the broker does not export:\n  %s", strings.Join(missing, "\n  "))
	}
	// Negative control: the same check finds a name the broker does not export.
	bogus := map[string][]string{"minibroker_mirror_lag_recordz": {"a typo"}}
	if missing := missingMetrics(bogus, have); len(missing) != 1 {
		t.Fatalf("a misspelt metric was not reported: %v", missing)
	}
}
