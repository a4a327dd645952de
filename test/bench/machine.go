package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

type machine struct {
	cpus                  int
	cpuModel, mem, kernel string
	goVersion             string
	loadBefore, loadAfter string
}

func describeMachine() machine {
	m := machine{cpus: runtime.NumCPU(), goVersion: runtime.Version()}
	m.cpuModel = procField("/proc/cpuinfo", "model name")
	m.mem = procField("/proc/meminfo", "MemTotal")
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		m.kernel = strings.TrimSpace(string(out))
	}
	return m
}

func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func splitComma(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// stat is a median with its range over runs.
type stat struct{ med, min, max float64 }

func summarize(xs []float64) stat {
	if len(xs) == 0 {
		return stat{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{med: med, min: s[0], max: s[len(s)-1]}
}

// cpuTime is the CPU time (user + system) this process has used; the
// page-cache write limit reads it.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
