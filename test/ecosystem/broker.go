package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// brokerProc is a `minibroker serve` started by this program on loopback
// ports with a data directory of its own.
type brokerProc struct {
	name     string
	addr     string // the Kafka listener
	httpAddr string // /metrics
	logPath  string
	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error

	logMu sync.Mutex
	log   strings.Builder
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startBroker runs bin with listeners on free loopback ports; sasl adds a
// SASL_PLAINTEXT listener (PLAIN users admin, alice, bob) with the
// authorizer on and admin a super user, instead of PLAINTEXT.
func startBroker(bin, tmp, name string, sasl bool, extra ...string) (*brokerProc, error) {
	kport, err := freePort()
	if err != nil {
		return nil, err
	}
	hport, err := freePort()
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(tmp, name+"-data")
	args := []string{"serve", "--data-dir", dataDir, "--http-listen", fmt.Sprintf("127.0.0.1:%d", hport),
		"--log-format", "json",
		// As Kafka's single-node compose files set it, so a group forms at once.
		"--set", "group.initial.rebalance.delay.ms=0"}
	if sasl {
		args = append(args,
			"--set", fmt.Sprintf("listeners=SASL_PLAINTEXT://127.0.0.1:%d", kport),
			"--set", "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
			"--set", `listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`,
			"--set", "super.users=User:admin",
			"--set", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer")
	} else {
		args = append(args, "--listen", fmt.Sprintf("127.0.0.1:%d", kport))
	}
	for _, kv := range extra {
		args = append(args, "--set", kv)
	}
	p := &brokerProc{name: name, logPath: filepath.Join(tmp, name+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stdout = logFile
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	trackGroup(p.cmd.Process.Pid)
	ready := make(chan struct{})
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(io.TeeReader(stderr, logFile))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			p.logMu.Lock()
			p.log.WriteString(line + "\n")
			p.logMu.Unlock()
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "serving" {
				once.Do(func() {
					p.addr, _ = m["advertised"].(string)
					p.httpAddr, _ = m["http"].(string)
					close(ready)
				})
			}
		}
		p.waitErr = p.cmd.Wait()
		untrackGroup(p.cmd.Process.Pid)
		logFile.Close()
	}()
	select {
	case <-ready:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("%s exited before serving: %v: %s", name, p.waitErr, tail(p.logs(), ""))
	case <-time.After(30 * time.Second):
		p.stop()
		return nil, fmt.Errorf("%s did not log \"serving\" within 30s: %s", name, tail(p.logs(), ""))
	}
}

func (p *brokerProc) logs() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.log.String()
}

// alive is nil while the process runs.
func (p *brokerProc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("the broker exited: %v", p.waitErr)
	default:
		return nil
	}
}

// stop sends SIGTERM, and SIGKILL to the process group after 15s.
func (p *brokerProc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// metric reads one series' value from /metrics (-1: absent).
func (p *brokerProc) metric(name string) (float64, error) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + p.httpAddr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? ([0-9.eE+-]+)$`)
	m := re.FindStringSubmatch(string(b))
	if m == nil {
		return -1, nil
	}
	return strconv.ParseFloat(m[2], 64)
}

// panicLines are the log lines that report a recovered panic: the API
// key, version and panic value of each.
func (p *brokerProc) panicLines() []string {
	var out []string
	for _, l := range strings.Split(p.logs(), "\n") {
		if !strings.Contains(strings.ToLower(l), "panic") {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			l = fmt.Sprintf("%v (api_key %v v%v): %v", m["msg"], m["api_key"], m["version"], m["panic"])
		}
		out = append(out, l)
	}
	return out
}

// unsupportedRequests are the distinct requests the broker closed a
// connection for because it does not serve their API or version (its
// "unsupported request" INFO line): client id, API and version.
func (p *brokerProc) unsupportedRequests() []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(p.logs(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil || !strings.HasPrefix(fmt.Sprint(m["msg"]), "unsupported request") {
			continue
		}
		k := fmt.Sprintf("%v %v v%v from %v (%v %v)", m["api"], m["api_key"], m["api_version"], m["client_id"],
			m["client_software_name"], m["client_software_version"])
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
