// Command ecosystem runs the Kafka tools people point at a broker against
// minibroker, as a user would, and prints a table of tool × command →
// result (ok, or FAIL with the error; "not run" with the reason when the
// tool could not be had). It is `make ecosystem`, not part of `make test`.
//
//	go run ./test/ecosystem -broker bin/minibroker -tools bin/tools -out docs/ECOSYSTEM.md
//
// It installs what a fresh machine can install (Debian's kcat,
// python3-kafka and burrow; the Go tools the Go module proxy serves, built
// into -tools), starts two brokers on loopback ports with temporary data
// directories (one PLAINTEXT; one SASL_PLAINTEXT with PLAIN users and the
// authorizer on, for the ACL rows), runs each tool's common commands with a
// timeout each, and checks the brokers' logs and /metrics for recovered
// panics. Every process it starts is stopped before it exits. A FAIL row
// is a finding, never hidden; the exit status is 0 unless the program
// itself could not run (-strict: non-zero on any FAIL).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

func main() {
	brokerBin := flag.String("broker", "bin/minibroker", "the minibroker binary (make build)")
	tools := flag.String("tools", "bin/tools", "where Go tools are built")
	out := flag.String("out", "", "rewrite the generated section of this markdown file (docs/ECOSYSTEM.md)")
	install := flag.Bool("install", true, "install missing Debian packages and build missing Go tools")
	only := flag.String("only", "", "run only the tools whose name matches this regexp")
	strict := flag.Bool("strict", false, "exit 1 when any row FAILs")
	flag.Parse()

	tmp, err := os.MkdirTemp("", "minibroker-ecosystem-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	killOnInterrupt(tmp)
	defer os.RemoveAll(tmp)
	toolsDir, _ := filepath.Abs(*tools)
	s := &session{tmp: tmp, tools: toolsDir}
	started := time.Now()

	if *install {
		s.installDebian()
		s.installGo()
	}
	a, err := startBroker(*brokerBin, tmp, "plain", false)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the PLAINTEXT broker:", err)
		os.Exit(2)
	}
	defer a.stop()
	b, err := startBroker(*brokerBin, tmp, "sasl", true)
	if err != nil {
		a.stop()
		fmt.Fprintln(os.Stderr, "start the SASL broker:", err)
		os.Exit(2)
	}
	defer b.stop()
	env := &env{s: s, plain: a, sasl: b, brokerBin: *brokerBin}

	var match *regexp.Regexp
	if *only != "" {
		match = regexp.MustCompile(*only)
	}
	for _, suite := range suites {
		if match != nil && !match.MatchString(suite.tool) {
			continue
		}
		suite.run(env)
	}
	env.brokerHealth()
	a.stop()
	b.stop()
	for _, p := range env.extra {
		p.stop()
	}

	table := s.table()
	fmt.Println(table)
	if *out != "" {
		if err := writeDoc(*out, table, started, time.Since(started)); err != nil {
			fmt.Fprintln(os.Stderr, "write", *out+":", err)
			os.Exit(2)
		}
	}
	if *strict {
		for _, r := range s.rows {
			if r.Result == resultFail {
				os.Exit(1)
			}
		}
	}
}

// env is what a suite gets: the session and both brokers.
type env struct {
	s         *session
	plain     *brokerProc
	sasl      *brokerProc
	brokerBin string
	extra     []*brokerProc // brokers a suite started, checked at the end
}

type suite struct {
	tool string
	run  func(e *env)
}

// suites run in this order.
var suites = []suite{
	{"kcat", kcatSuite},
	{"kafka-python", kafkaPythonSuite},
	{"kafkactl", kafkactlSuite},
	{"kadm", kadmSuite},
	{"burrow", burrowSuite},
	{"burrow", burrowKafka39Suite},
	{"unavailable", unavailableSuite},
}

// unavailableSuite: a row for each Go tool that could not be had, with
// what it would have been run for.
func unavailableSuite(e *env) {
	for _, t := range goTools {
		if t.name == "kafkactl" || e.s.lookTool(t.name) != "" {
			continue
		}
		e.s.skip(t.name, t.uses, "not installed: the Go module proxy does not serve it (see its install row)")
	}
}

// brokerHealth: the brokers still run and recovered no panic (their logs
// and minibroker_request_panics_total).
func (e *env) brokerHealth() {
	for _, p := range append([]*brokerProc{e.plain, e.sasl}, e.extra...) {
		e.s.check("minibroker", fmt.Sprintf("%s broker: still running, no recovered panic, no unreadable authz rule (log, /metrics)", p.name), func() error {
			if err := p.alive(); err != nil {
				return err
			}
			n, err := p.metric("minibroker_request_panics_total")
			if err != nil {
				return fmt.Errorf("/metrics: %v", err)
			}
			lines := p.panicLines()
			if n > 0 || len(lines) > 0 {
				return fmt.Errorf("%v panics recovered (minibroker_request_panics_total); the log: %s", n, strings.Join(lines, "; "))
			}
			// A request an authorization rule could not read is a bug too.
			if u, err := p.metric("minibroker_authz_rule_unreadable_total"); err == nil && u > 0 {
				return fmt.Errorf("%v requests an authorization rule could not read (minibroker_authz_rule_unreadable_total)", u)
			}
			return nil
		})
		e.s.check("minibroker", fmt.Sprintf("%s broker: no connection closed for an API or version it does not serve", p.name), func() error {
			if u := p.unsupportedRequests(); len(u) > 0 {
				return fmt.Errorf("%s", strings.Join(u, "; "))
			}
			return nil
		})
	}
}

// table is the rows as a markdown table.
func (s *session) table() string {
	var b strings.Builder
	b.WriteString("| tool | command | result | detail |\n|---|---|---|---|\n")
	for _, r := range s.rows {
		res := r.Result
		if res == resultFail {
			res = "**FAIL**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Tool, r.Command, res, r.Detail)
	}
	ok, fail, skip := 0, 0, 0
	for _, r := range s.rows {
		switch r.Result {
		case resultOK:
			ok++
		case resultFail:
			fail++
		default:
			skip++
		}
	}
	fmt.Fprintf(&b, "\n%d ok, %d FAIL, %d not run.\n", ok, fail, skip)
	return b.String()
}

const docMarker = "<!-- end of generated section: what follows is kept by make ecosystem -->"

// writeDoc replaces everything above the marker of path (the whole file
// when it has none) with the table.
func writeDoc(path, table string, started time.Time, took time.Duration) error {
	kept := ""
	if old, err := os.ReadFile(path); err == nil {
		if i := strings.Index(string(old), docMarker); i >= 0 {
			kept = string(old)[i+len(docMarker):]
		}
	}
	// The commit, and whether files other than this doc differ from it.
	rev := "unknown"
	if out, err := runCmd(cmdSpec{argv: []string{"git", "rev-parse", "--short", "HEAD"}, timeout: 10 * time.Second}); err == nil {
		rev = strings.TrimSpace(out)
		st, err := runCmd(cmdSpec{argv: []string{"git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!" + path},
			timeout: 10 * time.Second})
		if err == nil && strings.TrimSpace(st) != "" {
			rev += " with uncommitted changes"
		}
	}
	var b strings.Builder
	b.WriteString("# Kafka tools against minibroker\n\n")
	b.WriteString("Generated by `make ecosystem` (test/ecosystem): each tool installed as a fresh machine can\n")
	b.WriteString("install it, run as a user would against `make build`'s minibroker on loopback ports\n")
	b.WriteString("(a PLAINTEXT broker, and a SASL_PLAINTEXT one with PLAIN users and the authorizer on for\n")
	b.WriteString("the ACL rows). **FAIL** rows are findings, kept as they are; \"not run\" says why.\n\n")
	fmt.Fprintf(&b, "Run at %s UTC on minibroker %s, %s/%s, in %s.\n\n", started.UTC().Format("2006-01-02 15:04"), rev,
		runtime.GOOS, runtime.GOARCH, took.Round(time.Second))
	b.WriteString(table)
	b.WriteString("\n" + docMarker)
	if kept == "" {
		kept = "\n"
	}
	b.WriteString(kept)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
