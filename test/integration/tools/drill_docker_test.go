package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/drill"
)

// TestDrillDockerCompose runs `make drill-docker` (docker/drill.sh): the
// image built from this tree, the compose demo's clusters a and b under a
// project name of this test's own with Docker-chosen host ports, and
// `minibroker drill --failback` in a container on their network, topic
// demo with 3 partitions. It checks the script's exit status and the
// drill's JSON report (passed, nothing lost, every partition written in
// all three phases), and that nothing of the project is left: no
// container, network or volume. It skips, saying so, when no Docker
// engine (with compose) answers, and in -short mode.
func TestDrillDockerCompose(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the docker-compose drill")
	}
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("SKIPPED: no Docker engine answers (docker info: %v: %s); the docker-compose drill needs one", err, strings.TrimSpace(string(out)))
	}
	if exec.Command("docker", "compose", "version").Run() != nil && exec.Command("docker-compose", "version").Run() != nil {
		t.Skip("SKIPPED: neither docker compose nor docker-compose answers; the docker-compose drill needs one")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("%d%d", os.Getpid(), time.Now().UnixNano()%1e6)
	project, image, out := "mbdrilltest"+id, "minibroker:drilltest"+id, t.TempDir()
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", image).Run() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", root, "drill-docker", "DOCKER_IMAGE="+image)
	cmd.Env = append(os.Environ(), "DRILL_PROJECT="+project, "DRILL_OUT="+out)
	output, err := cmd.CombinedOutput()
	t.Logf("make drill-docker:\n%s", output)
	for _, kind := range []string{"ps -a", "network ls", "volume ls"} {
		args := append(strings.Fields(kind), "-q", "--filter", "label=com.docker.compose.project="+project)
		if left, _ := exec.Command("docker", args...).Output(); len(strings.TrimSpace(string(left))) > 0 {
			t.Errorf("docker %s: project %s left %s", kind, project, strings.Fields(string(left)))
		}
	}
	if err != nil {
		t.Fatalf("make drill-docker: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(out, "drill.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep drill.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Passed || len(rep.LostAtFailover) != 0 || len(rep.LostOnB) != 0 || len(rep.Gaps) != 0 || rep.PredictedLoss != 0 {
		t.Fatalf("compose drill: passed %v, lost %v / %v, gaps %v, predicted %d: %v", rep.Passed, rep.LostAtFailover, rep.LostOnB, rep.Gaps, rep.PredictedLoss, rep.Problems)
	}
	if rep.AckedOnA == 0 || rep.AckedOnB == 0 || rep.AckedOnA2 == 0 || rep.FailbackStartPlan == nil || len(rep.Partitions) != 3 {
		t.Fatalf("compose drill did not run its three phases on 3 partitions: A %d, B %d, A2 %d, partitions %+v", rep.AckedOnA, rep.AckedOnB, rep.AckedOnA2, rep.Partitions)
	}
	for _, p := range rep.Partitions {
		if p.Acked < 3 {
			t.Fatalf("partition %d: %d records acknowledged", p.Partition, p.Acked)
		}
	}
}
