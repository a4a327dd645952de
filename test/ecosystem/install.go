package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// debPackages are the Debian packages of the tools: the command each
// installs, and the package.
var debPackages = []struct{ command, pkg string }{
	{"/usr/bin/kcat", "kcat"},
	{"/usr/lib/python3/dist-packages/kafka/__init__.py", "python3-kafka"},
	{"/usr/bin/Burrow", "burrow"},
	// Burrow 1.2 does not start without a ZooKeeper for its coordinator.
	{"/usr/share/java/zookeeper.jar", "zookeeper"},
}

// goTool is a command built from a module the Go module proxy serves.
type goTool struct {
	name    string // the binary, in the tools directory
	module  string
	version string // "latest", or a version pinned where the proxy lists none
	pkg     string // the main package, relative to the module root
	uses    string // what it would be run for
}

// goTools: the Go command-line tools people point at Kafka. kafkactl is
// pinned: the proxy serves v5.4.0 but lists no versions, so @latest fails.
var goTools = []goTool{
	{"kafkactl", "github.com/deviceinsight/kafkactl/v5", "v5.4.0", ".", ""},
	{"kaf", "github.com/birdayz/kaf", "latest", "cmd/kaf", "topics, produce/consume with keys and headers, groups, nodes"},
	{"kcl", "github.com/twmb/kcl", "latest", ".", "admin topics, configs, ACLs, quotas, partas, elect-leaders (the kadm rows make these calls)"},
	{"kafka_exporter", "github.com/danielqsj/kafka_exporter", "latest", ".", "scrape consumer group lag (kafka_consumergroup_lag)"},
	{"kminion", "github.com/redpanda-data/kminion/v2", "latest", ".", "scrape consumer group lag (kminion_kafka_consumer_group_topic_lag)"},
	{"rpk", "github.com/redpanda-data/redpanda/src/go/rpk", "latest", "cmd/rpk", "topic, group, cluster info/quotas, acl (the kadm rows make these calls)"},
}

// installDebian installs the Debian packages that are missing, one
// apt-get run for all of them.
func (s *session) installDebian() {
	var missing []string
	for _, d := range debPackages {
		if _, err := os.Stat(d.command); err != nil {
			missing = append(missing, d.pkg)
		}
	}
	if len(missing) == 0 {
		for _, d := range debPackages {
			s.add(row{Tool: d.pkg, Command: "install (Debian package)", Result: resultOK, Detail: "already installed"})
		}
		return
	}
	sudo := []string{}
	if os.Geteuid() != 0 {
		sudo = []string{"sudo"}
	}
	_, err := runCmd(cmdSpec{argv: append(sudo, "apt-get", "update", "-qq"), timeout: 5 * time.Minute})
	if err == nil {
		argv := append(append(sudo, "apt-get", "install", "-y", "-qq", "--no-install-recommends"), missing...)
		_, err = runCmd(cmdSpec{argv: argv, timeout: 10 * time.Minute, env: []string{"DEBIAN_FRONTEND=noninteractive"}})
	}
	for _, d := range debPackages {
		s.check(d.pkg, "install (Debian package)", func() error {
			if _, statErr := os.Stat(d.command); statErr != nil {
				return fmt.Errorf("%s missing after apt-get: %v", d.command, err)
			}
			return nil
		})
	}
}

// installGo builds each Go tool into the tools directory unless it is
// there: the module is downloaded through the Go module proxy (go mod
// download), then its main package built with the module's own go.mod,
// as `go install module@version` would (which needs the proxy's version
// list even for a pinned version).
func (s *session) installGo() map[string]bool {
	have := map[string]bool{}
	if err := os.MkdirAll(s.tools, 0o755); err != nil {
		s.add(row{Tool: "go tools", Command: "mkdir " + s.tools, Result: resultFail, Detail: err.Error()})
		return have
	}
	for _, t := range goTools {
		bin := filepath.Join(s.tools, t.name)
		if _, err := os.Stat(bin); err == nil {
			have[t.name] = true
			s.add(row{Tool: t.name, Command: "install (Go module proxy)", Result: resultOK, Detail: "already built in the tools directory"})
			continue
		}
		command := fmt.Sprintf("install (go mod download %s@%s, go build)", t.module, t.version)
		err := func() error {
			out, err := runCmd(cmdSpec{argv: []string{"go", "mod", "download", "-json", t.module + "@" + t.version},
				timeout: 5 * time.Minute, dir: os.TempDir()})
			var info struct{ Dir, Error string }
			if jerr := json.Unmarshal([]byte(out), &info); jerr == nil && info.Error != "" {
				return errNotServed{info.Error}
			}
			if err != nil {
				return fmt.Errorf("go mod download: %v", err)
			}
			if info.Dir == "" {
				return fmt.Errorf("go mod download gave no directory: %s", strings.TrimSpace(out))
			}
			abs, _ := filepath.Abs(bin)
			_, err = runCmd(cmdSpec{argv: []string{"nice", "-n", "10", "go", "build", "-o", abs, "./" + t.pkg},
				dir: info.Dir, timeout: 25 * time.Minute, env: []string{"CGO_ENABLED=0"}})
			if err != nil {
				return fmt.Errorf("go build: %v", err)
			}
			return nil
		}()
		var notServed errNotServed
		switch {
		case err == nil:
			s.add(row{Tool: t.name, Command: command, Result: resultOK})
		case errors.As(err, &notServed):
			s.skip(t.name, command, "the Go module proxy does not serve it: "+notServed.msg)
		default:
			s.add(row{Tool: t.name, Command: command, Result: resultFail, Detail: oneLine(err.Error())})
		}
		have[t.name] = err == nil
	}
	return have
}

// errNotServed: the Go module proxy refused the module (a final "no").
type errNotServed struct{ msg string }

func (e errNotServed) Error() string { return e.msg }

// lookTool finds name in the tools directory, then on PATH.
func (s *session) lookTool(name string) string {
	if p := filepath.Join(s.tools, name); fileExists(p) {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
