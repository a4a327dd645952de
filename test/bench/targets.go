package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// A target is a broker run as a process of its own, as users run one:
// `minibroker serve` built from this tree, or kfake wrapped by
// test/bench/kfakeserve. Each has its own heap and garbage collector; the
// load tool runs as a third process (`minibroker perf`). Brokers started
// in the benchmark's own process would share one heap with each other and
// with the client, so kfake's stored records would set how often the
// garbage collector ran for all of them (see docs/OPTIMISATIONS.md).
type target struct {
	name  string
	flags []string // kfakeserve flags
	exe   string   // a minibroker binary of its own (-produce-compare)
}

var (
	minibroker = target{name: "minibroker"}
	kfakeT     = target{name: "kfake"}
	// storeNothing is kfake dropping every produced record: the upper
	// bound for produce through kgo on this machine.
	storeNothing = target{name: "store-nothing", flags: []string{"-blackhole"}}
)

// cannedName is the consume bound: a broker that stores nothing and answers
// every Fetch with copies of one record batch held in memory.
const cannedName = "serve-canned"

// serveCanned is kfake with SyntheticFetch: each Fetch is answered with
// copies of one uncompressed batch of size-byte values (1 MiB of them), so
// its records/s is the most any broker could give this consumer on this
// machine.
func serveCanned(size int) target {
	return target{name: cannedName, flags: []string{"-blackhole", fmt.Sprintf("-synthetic-record-bytes=%d", size)}}
}

// compareName is the -produce-compare binary's column.
const compareName = "minibroker (compare)"

func (t target) start(bin string) (*process, error) {
	if t.exe != "" {
		return startProcess(t.exe, "minibroker")
	}
	if t.name == minibroker.name {
		return startProcess(bin, "minibroker")
	}
	return startProcess(bin, "kfake", t.flags...)
}

// buildBinaries builds minibroker and kfakeserve into a temp dir.
func buildBinaries() (dir string, err error) {
	dir, err = os.MkdirTemp("", "bench-bin-")
	if err != nil {
		return "", err
	}
	for _, b := range [][2]string{{"minibroker", "./cmd/minibroker"}, {"kfakeserve", "./test/bench/kfakeserve"}} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, b[0]), b[1]).CombinedOutput()
		if err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("go build %s: %v: %s", b[1], err, out)
		}
	}
	return dir, nil
}
