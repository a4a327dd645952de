package itest

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
)

// MetricValue sums a Prometheus series over its labels (those containing
// label, if set) from a /metrics endpoint.
func MetricValue(t *testing.T, httpAddr, name, label string) float64 {
	t.Helper()
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(HttpGet(t, "http://"+httpAddr+"/metrics")))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		if label != "" && !strings.Contains(line, label) {
			continue
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		sum += v
	}
	return sum
}
