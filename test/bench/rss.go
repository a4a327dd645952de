package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minibroker/minibroker/internal/perf"
)

// runRSS runs each broker as a process of its own (minibroker serve, and
// kfake wrapped by test/bench/kfakeserve) and reads its VmRSS: at rest
// empty, at rest with 1,000 idle partitions, and the peak under a produce
// load.
func runRSS(r *report) error {
	bin := r.bin
	rest := newRow("RSS at rest, empty broker", "MiB", false)
	idle := newRow("RSS per idle partition (1,000-partition topic created, at rest)", "KiB", false)
	load := newRow(fmt.Sprintf("RSS peak under load (produce 100 B, 8 partitions, %s)", r.opts.duration), "MiB", false)
	rest.command = "(3 runs each) minibroker serve --data-dir TMP --listen 127.0.0.1:PORT --http-listen '' --log-level warn | kfakeserve; VmRSS from /proc/PID/status"
	r.rss = append(r.rss, rest, idle, load)
	names := []string{"minibroker", "kfake"}
	for run := range min(r.opts.runs, 3) {
		for k := range names {
			name := names[(k+run)%2]
			p, err := startProcess(bin, name)
			if err != nil {
				return err
			}
			err = func() error {
				defer p.stop()
				time.Sleep(time.Second)
				base := p.rssKiB()
				rest.samples[name] = append(rest.samples[name], float64(base)/1024)
				ctx := context.Background()
				if _, err := perf.EnsureTopic(ctx, perf.Config{Brokers: []string{p.addr}, Topic: "idle", Partitions: 1000}); err != nil {
					return err
				}
				time.Sleep(time.Second)
				idle.samples[name] = append(idle.samples[name], float64(p.rssKiB()-base)/1000)
				var peak int64
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					t := time.NewTicker(50 * time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
							peak = max(peak, p.rssKiB())
						}
					}
				}()
				_, err := perf.Produce(ctx, perf.Config{Brokers: []string{p.addr}, Topic: "load", Partitions: 8,
					Duration: r.opts.duration, RecordSize: 100, Acks: "all", Concurrency: 1})
				close(stop)
				wg.Wait()
				load.samples[name] = append(load.samples[name], float64(peak)/1024)
				return err
			}()
			if err != nil {
				return fmt.Errorf("rss %s: %w", name, err)
			}
		}
	}
	return nil
}

type process struct {
	cmd     *exec.Cmd
	addr    string
	dataDir string
	stdin   interface{ Close() error }
}

// startProcess starts `minibroker serve` on a temp data dir (name
// "minibroker", flags added to its command line; bin is the directory of
// the built binaries or a minibroker binary) or kfakeserve with flags
// (name "kfake") and waits until it listens.
func startProcess(bin, name string, flags ...string) (*process, error) {
	p := &process{}
	switch name {
	case "minibroker":
		dir, err := os.MkdirTemp("", "bench-minibroker-")
		if err != nil {
			return nil, err
		}
		p.dataDir = dir
		p.addr, err = freeAddr()
		if err != nil {
			return nil, err
		}
		args := []string{"serve", "--data-dir", dir, "--listen", p.addr, "--http-listen", "", "--log-level", "warn"}
		exe := filepath.Join(bin, "minibroker")
		if st, err := os.Stat(bin); err == nil && !st.IsDir() {
			exe = bin // a binary of its own (-mirror-compare)
		}
		p.cmd = exec.Command(exe, append(args, flags...)...) // later flags win
		p.cmd.Stderr = os.Stderr
		if err := p.cmd.Start(); err != nil {
			return nil, err
		}
		for i := 0; ; i++ {
			if c, err := net.Dial("tcp", p.addr); err == nil {
				c.Close()
				break
			}
			if i > 200 {
				p.stop()
				return nil, fmt.Errorf("minibroker serve did not listen on %s", p.addr)
			}
			time.Sleep(25 * time.Millisecond)
		}
	case "kfake":
		p.cmd = exec.Command(filepath.Join(bin, "kfakeserve"), flags...)
		in, err := p.cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		p.stdin = in
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		p.cmd.Stderr = os.Stderr
		if err := p.cmd.Start(); err != nil {
			return nil, err
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			p.stop()
			return nil, fmt.Errorf("kfakeserve: %w", err)
		}
		p.addr = strings.TrimSpace(line)
	}
	return p, nil
}

func (p *process) stop() {
	if p.stdin != nil {
		p.stdin.Close()
	}
	if p.cmd.Process != nil {
		p.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-done
		}
	}
	if p.dataDir != "" {
		os.RemoveAll(p.dataDir)
	}
}

func (p *process) rssKiB() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// cpu is the process's user and system CPU time so far, from
// /proc/PID/stat (clock ticks of 10 ms, the Linux USER_HZ).
func (p *process) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields 14 and 15
	// (utime, stime) count from after its closing parenthesis.
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
