package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// broker runs `minibroker serve` on one data dir and one pair of ports for
// the whole soak; each start is a new lifetime with its own log file.
type broker struct {
	bin      string
	dataDir  string
	logDir   string
	addr     string // Kafka listener, fixed across restarts
	httpAddr string // /metrics listener, fixed across restarts

	mu       sync.Mutex // guards the fields below
	lifetime int
	cmd      *exec.Cmd
	exited   chan error
	logStats *logStats
	allLogs  []*logStats // one per lifetime, in order
}

// logStats counts what one lifetime logged at warn and above.
type logStats struct {
	mu       sync.Mutex
	warn     int
	errors   int
	panics   int
	messages map[string]int // "level: msg" -> count
}

func newBroker(bin, workDir string) (*broker, error) {
	kafkaPort, err := freePort()
	if err != nil {
		return nil, err
	}
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	b := &broker{
		bin:      bin,
		dataDir:  filepath.Join(workDir, "data"),
		logDir:   filepath.Join(workDir, "logs"),
		addr:     "127.0.0.1:" + strconv.Itoa(kafkaPort),
		httpAddr: "127.0.0.1:" + strconv.Itoa(httpPort),
	}
	if err := os.MkdirAll(b.logDir, 0o755); err != nil {
		return nil, err
	}
	return b, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start launches a new lifetime and waits for its "serving" line. It
// retries a few times when the port is still held by the previous process.
func (b *broker) start() (time.Duration, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lifetime++
	began := time.Now()
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if err := b.startOnceLocked(); err != nil {
			lastErr = err
			time.Sleep(time.Second)
			continue
		}
		return time.Since(began), nil
	}
	return 0, lastErr
}

func (b *broker) startOnceLocked() error {
	logFile, err := os.OpenFile(filepath.Join(b.logDir, fmt.Sprintf("broker-%03d.log", b.lifetime)),
		os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(b.bin, "serve", "--data-dir", b.dataDir, "--listen", b.addr,
		"--http-listen", b.httpAddr, "--log-format", "json", "--cluster-id", "soak")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return err
	}
	cmd.Stdout = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	stats := &logStats{messages: map[string]int{}}
	exited := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		defer logFile.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		readyClosed := false
		for sc.Scan() {
			line := sc.Text()
			io.WriteString(logFile, line+"\n")
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil {
				if strings.Contains(line, "panic:") || strings.HasPrefix(line, "fatal error:") {
					stats.add("panic", line)
				}
				continue
			}
			level, _ := m["level"].(string)
			msg, _ := m["msg"].(string)
			switch level {
			case "warn", "error", "dpanic", "panic", "fatal":
				stats.add(level, msg)
			}
			if msg == "serving" && !readyClosed {
				readyClosed = true
				close(ready)
			}
		}
		exited <- cmd.Wait()
	}()
	select {
	case <-ready:
	case err := <-exited:
		return fmt.Errorf("broker lifetime %d exited before serving: %v (see %s)", b.lifetime, err, b.logDir)
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("broker lifetime %d did not serve within 60s", b.lifetime)
	}
	b.cmd, b.exited, b.logStats = cmd, exited, stats
	b.allLogs = append(b.allLogs, stats)
	return nil
}

func (s *logStats) add(level, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch level {
	case "warn":
		s.warn++
	case "error":
		s.errors++
	default:
		s.panics++
	}
	s.messages[level+": "+msg]++
}

// stop sends sig and waits for the exit. A SIGTERM must end in exit 0
// within 40 s (the broker's own shutdown budget is 30 s).
func (b *broker) stop(sig syscall.Signal) (time.Duration, error) {
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.cmd = nil
	b.mu.Unlock()
	if cmd == nil {
		return 0, nil
	}
	began := time.Now()
	cmd.Process.Signal(sig)
	select {
	case err := <-exited:
		took := time.Since(began)
		if sig == syscall.SIGTERM && err != nil {
			return took, fmt.Errorf("SIGTERM exit: %v", err)
		}
		return took, nil
	case <-time.After(40 * time.Second):
		cmd.Process.Kill()
		<-exited
		return time.Since(began), fmt.Errorf("no exit within 40s of %v (killed)", sig)
	}
}

// exitedEarly reports whether the current lifetime died on its own.
func (b *broker) exitedEarly() (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd == nil {
		return false, nil
	}
	select {
	case err := <-b.exited:
		b.cmd = nil
		return true, err
	default:
		return false, nil
	}
}

// sample reads the current lifetime's VmRSS and, from /metrics,
// go_goroutines, go_memstats_heap_inuse_bytes and process_open_fds.
func (b *broker) sample(ctx context.Context) (sample, bool) {
	b.mu.Lock()
	cmd, lifetime := b.cmd, b.lifetime
	b.mu.Unlock()
	if cmd == nil {
		return sample{}, false
	}
	s := sample{lifetime: lifetime, pid: cmd.Process.Pid, at: time.Now()}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		return sample{}, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			s.rssKiB, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.httpAddr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return sample{}, false
	}
	defer resp.Body.Close()
	s.goroutines, s.heapInuse, s.openFDs = -1, -1, -1
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "go_goroutines":
			s.goroutines = int64(v)
		case "go_memstats_heap_inuse_bytes":
			s.heapInuse = int64(v)
		case "process_open_fds":
			s.openFDs = int64(v)
		}
	}
	return s, s.goroutines >= 0
}

func (b *broker) lifetimeLogs() []*logStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*logStats(nil), b.allLogs...)
}
