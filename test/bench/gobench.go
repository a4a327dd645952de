package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// goBenchLine is one result line of go test -bench: name, then value/unit
// pairs.
type goBenchLine struct {
	name    string
	metrics map[string]float64
}

func runGoTestBench(env []string, args ...string) (string, []goBenchLine, error) {
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	var lines []goBenchLine
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		l := goBenchLine{name: f[0], metrics: map[string]float64{}}
		if i := strings.LastIndexByte(l.name, '-'); i > 0 {
			l.name = l.name[:i] // the GOMAXPROCS suffix
		}
		for i := 2; i+1 < len(f); i += 2 {
			if v, perr := strconv.ParseFloat(f[i], 64); perr == nil {
				l.metrics[f[i+1]] = v
			}
		}
		lines = append(lines, l)
	}
	cmdline := strings.TrimSpace(strings.Join(env, " ") + " go " + strings.Join(args, " "))
	if err != nil {
		return cmdline, lines, fmt.Errorf("%s: %v\n%s", cmdline, err, out.String())
	}
	return cmdline, lines, nil
}

// runGoBench runs minibrokertest's start-up and cycle benchmarks beside
// kfake's counterparts (minibrokertest/kfake_bench_test.go).
func runGoBench(r *report) error {
	cmdline, lines, err := runGoTestBench(nil, "test", "-run", "^$", "-bench", "StartToFirstProduce|Cycle",
		"-benchtime", "20x", "-count", strconv.Itoa(r.opts.runs), "./minibrokertest")
	r.goBenchCmd = cmdline
	pairs := [][3]string{
		{"start to first acknowledged produce", "BenchmarkStartToFirstProduce", "BenchmarkKfakeStartToFirstProduce"},
		{"cycle: start, produce, consume, close", "BenchmarkCycle", "BenchmarkKfakeCycle"},
	}
	for _, p := range pairs {
		rw := newRow(p[0], "ms", false)
		for _, l := range lines {
			switch l.name {
			case p[1]:
				rw.samples["minibroker"] = append(rw.samples["minibroker"], l.metrics["ns/op"]/1e6)
			case p[2]:
				rw.samples["kfake"] = append(rw.samples["kfake"], l.metrics["ns/op"]/1e6)
			}
		}
		r.goBench = append(r.goBench, rw)
	}
	return err
}

func runSecurityBench(r *report) error {
	t0 := time.Now()
	cmdline, lines, err := runGoTestBench([]string{fmt.Sprintf("MINIBROKER_BENCH_SECURITY_MB=%d", r.opts.securityMB)},
		"test", "-run", "^$", "-bench", "SecurityThroughput|SCRAMConnect", "-benchtime", "1x", "-count", "1", "-timeout", "10m", "./test/integration/security")
	r.securityCmd = cmdline
	r.security = lines
	r.securityTook = time.Since(t0)
	return err
}

// runFailoverBench: `mirror stop` of 1,000 mirrored partitions until all
// are STOPPED, -runs iterations (the benchmark reports their median), and
// its floor measured in the same run: 1,000 new files and their
// directories fsynced 64 at a time (test/integration/mirror/failover_bench_test.go).
func runFailoverBench(r *report) error {
	t0 := time.Now()
	cmdline, lines, err := runGoTestBench(nil, "test", "-run", "^$", "-bench", "FailoverStop1000Partitions",
		"-benchtime", fmt.Sprintf("%dx", r.opts.runs), "-count", "1", "-timeout", "15m", "./test/integration/mirror")
	r.failoverCmd, r.failover, r.failoverTook = cmdline, lines, time.Since(t0)
	return err
}

// runAuthzBench: produce with the authorizer on and 1,000 ACLs against
// the authorizer off, in the same run (test/integration/security/acl_bench_test.go).
func runAuthzBench(r *report) error {
	t0 := time.Now()
	cmdline, lines, err := runGoTestBench(nil, "test", "-run", "^$", "-bench", "AuthorizerProduce", "-benchtime", "1x",
		"-count", "1", "-timeout", "10m", "./test/integration/security")
	r.authzCmd, r.authz, r.authzTook = cmdline, lines, time.Since(t0)
	return err
}

// runQuotaBench runs the client quota benchmarks
// (test/integration/hostile/quotas_bench_test.go): a quota'd producer and
// consumer beside unquota'd ones on one broker.
func runQuotaBench(r *report) error {
	t0 := time.Now()
	cmdline, lines, err := runGoTestBench(nil, "test", "-run", "^$", "-bench", "ClientQuota", "-benchtime", "1x",
		"-count", "1", "-timeout", "20m", "./test/integration/hostile")
	r.quotasCmd, r.quotas, r.quotasTook = cmdline, lines, time.Since(t0)
	return err
}
