package mirror

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/minibrokertest"
)

// stopStepGate makes STOPPING's barrier step of one partition fail or
// block while told to: a disk that refuses the barrier, or a step that
// takes longer than the operator waits.
type stopStepGate struct {
	mu      sync.Mutex
	topic   string
	part    int32
	fail    bool
	release chan struct{} // non-nil: the step waits for it
}

func (g *stopStepGate) hook(step mirror.StopStep, topic string, p int32) error {
	g.mu.Lock()
	fail, release := g.fail, g.release
	g.mu.Unlock()
	if step != mirror.StepBarrier || topic != g.topic || p != g.part {
		return nil
	}
	if release != nil {
		<-release
	}
	if fail {
		return errors.New("simulated barrier write failure")
	}
	return nil
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestMirrorStopAllTopicsWait: `mirror stop` through the built binary on
// a mirror of two topics (five partitions). It names its topics or says
// --all-topics (exit 1 otherwise, nothing stopped); without --wait it
// returns once STOPPING is persisted and the steps finish in the broker;
// with --wait it exits 3 and lists the partition a failed step left
// STOPPING (the others STOPPED), exits 3 at the timeout while a step is
// held (the steps then finish in the broker), and exits 0 once every
// partition is STOPPED: one barrier each, at the last mirrored offset,
// and every partition writable.
func TestMirrorStopAllTopicsWait(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("t1", 2), minibrokertest.Topic("t2", 3))
	pa := itest.IdempotentProducer(t, a.Addr())
	for p := int32(0); p < 2; p++ {
		itest.ProduceSerially(t, pa, "t1", p, "a", 3)
	}
	for p := int32(0); p < 3; p++ {
		itest.ProduceSerially(t, pa, "t2", p, "a", 4)
	}
	gate := &stopStepGate{topic: "t2", part: 1, fail: true}
	b := itest.StartBroker(t, itest.BrokerOptions{HTTP: true, Mirror: mirror.WithTestHooks(mirror.Options{}, itest.MirrorHooks{StopStep: gate.hook})})
	if err := itest.MirrorOn(b).Create("from-a", []string{a.Addr()}, ""); err != nil {
		t.Fatal(err)
	}
	if err := itest.MirrorOn(b).Start(t.Context(), "from-a", []string{"t1", "t2"}); err != nil {
		t.Fatal(err)
	}
	itest.WaitMirrored(t, a, b, "t1", 2)
	itest.WaitMirrored(t, a, b, "t2", 3)
	admin := "--admin=" + b.B.HTTPAddr()
	state := func(topic string, p int32) mirror.State {
		st, err := itest.MirrorOn(b).Describe("from-a")
		if err != nil {
			t.Fatal(err)
		}
		for _, ps := range st.Partitions {
			if ps.Topic == topic && ps.Partition == p {
				return ps.State
			}
		}
		t.Fatalf("no %s-%d in describe", topic, p)
		return ""
	}

	// Neither --topics nor --all-topics: refused, nothing stopped.
	out, err := itest.RunCLI(t, "mirror", "stop", "from-a", admin)
	if exitCode(err) != 1 || !strings.Contains(out, "--all-topics") || state("t1", 0) != mirror.Mirroring {
		t.Fatalf("stop without topics: exit %d, t1-0 %s\n%s", exitCode(err), state("t1", 0), out)
	}

	// Without --wait: the answer once STOPPING is persisted; the steps end in the broker.
	out, err = itest.RunCLI(t, "mirror", "stop", "from-a", "--topics", "t1", admin)
	if err != nil || !strings.Contains(out, "failover") {
		t.Fatalf("stop t1 without --wait: %v\n%s", err, out)
	}
	for deadline := time.Now().Add(30 * time.Second); state("t1", 0) != mirror.Stopped || state("t1", 1) != mirror.Stopped; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("t1 never STOPPED: %s %s", state("t1", 0), state("t1", 1))
		}
	}

	// --wait with a step failing on t2-1: exit 3, t2-1 listed, the others STOPPED.
	out, err = itest.RunCLI(t, "mirror", "stop", "from-a", "--all-topics", "--wait", admin)
	if exitCode(err) != 3 || !strings.Contains(out, "4 of 5 partitions STOPPED") ||
		!strings.Contains(out, "simulated barrier write failure") || !hasRow(out, "t2", "1", "STOPPING") {
		t.Fatalf("stop --wait with a failing step: exit %d\n%s", exitCode(err), out)
	}
	for _, k := range []struct {
		topic string
		p     int32
	}{{"t1", 0}, {"t1", 1}, {"t2", 0}, {"t2", 2}} {
		if s := state(k.topic, k.p); s != mirror.Stopped {
			t.Fatalf("%s-%d %s after the stop, want STOPPED", k.topic, k.p, s)
		}
	}
	if mode, _ := itest.MustPartition(t, b, "t2", 1).Mode(); mode != partition.Mirrored {
		t.Fatal("t2-1 writable while STOPPING")
	}

	// --wait while the step is held: exit 3 at the timeout; the steps go on.
	release := make(chan struct{})
	gate.mu.Lock()
	gate.fail, gate.release = false, release
	gate.mu.Unlock()
	start := time.Now()
	out, err = itest.RunCLI(t, "mirror", "stop", "from-a", "--all-topics", "--wait", "--timeout", "500ms", admin)
	if exitCode(err) != 3 || !strings.Contains(out, "timed out") || !hasRow(out, "t2", "1", "STOPPING") {
		t.Fatalf("stop --wait --timeout 500ms with a held step: exit %d after %s\n%s", exitCode(err), time.Since(start), out)
	}
	gate.mu.Lock()
	gate.release = nil
	gate.mu.Unlock()
	close(release)

	// --wait again: everything STOPPED, exit 0.
	out, err = itest.RunCLI(t, "mirror", "stop", "from-a", "--all-topics", "--wait", admin)
	if err != nil || !strings.Contains(out, "failover complete: 5 of 5 partitions STOPPED") {
		t.Fatalf("stop --wait after the step recovered: %v\n%s", err, out)
	}
	st, err := itest.MirrorOn(b).Describe("from-a")
	if err != nil {
		t.Fatal(err)
	}
	pb := itest.IdempotentProducer(t, b.Addr())
	for _, ps := range st.Partitions {
		want := int64(3)
		if ps.Topic == "t2" {
			want = 4
		}
		if ps.State != mirror.Stopped || ps.LastMirroredOffset != want || ps.BarrierOffset != want {
			t.Fatalf("%s-%d after the failover: %+v", ps.Topic, ps.Partition, ps)
		}
		if got := itest.Barriers(t, b, ps.Topic, ps.Partition); fmt.Sprint(got) != fmt.Sprint([]int64{want}) {
			t.Fatalf("%s-%d barriers %v, want one at %d", ps.Topic, ps.Partition, got, want)
		}
		itest.ProduceSerially(t, pb, ps.Topic, ps.Partition, "b", 1) // writable
	}
}

// hasRow reports whether a table in out has a row starting with the
// given cells (whitespace-separated).
func hasRow(out string, cells ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(cells) && strings.Join(f[:len(cells)], " ") == strings.Join(cells, " ") {
			return true
		}
	}
	return false
}
