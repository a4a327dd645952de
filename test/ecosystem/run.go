package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// row is one line of the table: a tool, what a user did with it, and
// what happened.
type row struct {
	Tool, Command, Result, Detail string
}

const (
	resultOK   = "ok"
	resultFail = "FAIL"
	resultSkip = "not run"
)

// session collects the rows and owns every process it started.
type session struct {
	tmp   string // scratch directory, removed at the end
	tools string // where go-installed tools are

	mu   sync.Mutex
	rows []row
}

func (s *session) add(r row) {
	s.mu.Lock()
	s.rows = append(s.rows, r)
	s.mu.Unlock()
	detail := ""
	if r.Detail != "" {
		detail = ": " + r.Detail
	}
	fmt.Fprintf(os.Stderr, "%-15s %-58s %s%s\n", r.Tool, r.Command, r.Result, detail)
}

// check runs fn and records its outcome as a row.
func (s *session) check(tool, command string, fn func() error) error {
	err := fn()
	if err != nil {
		s.add(row{Tool: tool, Command: command, Result: resultFail, Detail: oneLine(err.Error())})
	} else {
		s.add(row{Tool: tool, Command: command, Result: resultOK})
	}
	return err
}

// skip records a command that could not be run, and why.
func (s *session) skip(tool, command, why string) {
	s.add(row{Tool: tool, Command: command, Result: resultSkip, Detail: oneLine(why)})
}

// oneLine makes text fit a table cell: no newlines or pipes, at most 600
// characters.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.NewReplacer("\r", " ", "\n", " ⏎ ", "\t", " ", "|", "/", "`", "'").Replace(s)
	// No registry's host in the docs: the URL's host becomes $GOPROXY.
	s = regexp.MustCompile(`https?://[A-Za-z0-9.-]+/`).ReplaceAllString(s, "$$GOPROXY/")
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}

// cmdSpec is one external command.
type cmdSpec struct {
	argv    []string
	stdin   string
	env     []string // added to the environment
	dir     string
	timeout time.Duration
}

// runCmd runs c with its timeout in its own process group (killed whole on
// timeout) and returns stdout; a non-zero exit or a timeout is an error
// holding the tail of stderr (or stdout).
func runCmd(c cmdSpec) (string, error) {
	if c.timeout == 0 {
		c.timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Dir = c.dir
	if c.stdin != "" {
		cmd.Stdin = strings.NewReader(c.stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	trackGroup(cmd.Process.Pid)
	err := cmd.Wait()
	untrackGroup(cmd.Process.Pid)
	if ctx.Err() == context.DeadlineExceeded {
		return stdout.String(), fmt.Errorf("timed out after %v: %s", c.timeout, tail(stderr.String(), stdout.String()))
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.String(), fmt.Errorf("exit %d: %s", ee.ExitCode(), tail(stderr.String(), stdout.String()))
		}
		return stdout.String(), err
	}
	return stdout.String(), nil
}

// tail is the last few meaningful lines of a command's output.
func tail(stderr, stdout string) string {
	text := strings.TrimSpace(stderr)
	if text == "" {
		text = strings.TrimSpace(stdout)
	}
	lines := strings.Split(text, "\n")
	var keep []string
	for i := len(lines) - 1; i >= 0 && len(keep) < 3; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append([]string{l}, keep...)
		}
	}
	return strings.Join(keep, " / ")
}

// expectContains fails unless out holds every want.
func expectContains(out string, want ...string) error {
	var missing []string
	for _, w := range want {
		if !strings.Contains(out, w) {
			missing = append(missing, fmt.Sprintf("%q", w))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("output lacks %s: %s", strings.Join(missing, ", "), tail("", out))
	}
	return nil
}

// permanent marks an error that waiting will not cure (a process exited).
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// waitUntil polls cond every 250ms until it returns nil, a permanent
// error, or timeout passes.
func waitUntil(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		var perm permanent
		if errors.As(err, &perm) {
			return perm.error
		}
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func netDial(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, 2*time.Second) }

// groups are the process groups alive now, killed whole if this program
// is interrupted (each child runs in a group of its own, out of reach of
// the terminal's Ctrl-C).
var groups = struct {
	sync.Mutex
	pgids map[int]bool
}{pgids: map[int]bool{}}

func trackGroup(pgid int) {
	groups.Lock()
	groups.pgids[pgid] = true
	groups.Unlock()
}

func untrackGroup(pgid int) {
	groups.Lock()
	delete(groups.pgids, pgid)
	groups.Unlock()
}

// killOnInterrupt: on SIGINT or SIGTERM every tracked process group gets
// SIGTERM, then SIGKILL 3 s later; tmp is removed and the program exits
// 130.
func killOnInterrupt(tmp string) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ch
		groups.Lock()
		defer groups.Unlock()
		for pgid := range groups.pgids {
			syscall.Kill(-pgid, syscall.SIGTERM)
		}
		time.Sleep(3 * time.Second)
		for pgid := range groups.pgids {
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
		os.RemoveAll(tmp)
		fmt.Fprintln(os.Stderr, "interrupted: every process started was stopped")
		os.Exit(130)
	}()
}
