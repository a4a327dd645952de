package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/adminclient"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorBinaryKill9DuringFailoverModes: the built binary mirrors 8
// partitions, each holding the failover-mode scenario (two open
// transactions spanning every partition, an acknowledged record after
// each), and is killed with SIGKILL at several delays after `mirror
// stop` answered (STOPPING persisted: the kill lands inside its steps or
// after them; the test logs what the state on disk said), in both modes. After the restart, `mirror stop
// --all-topics --wait` ends every partition STOPPED; dump-log then finds
// exactly one barrier a partition at the mode's offset and the mode's
// ABORT markers once each; a read_committed consumer reads the mode's
// records and none of the open transactions'; and records a local
// producer had acknowledged after the failover survive another kill -9.
func TestMirrorBinaryKill9DuringFailoverModes(t *testing.T) {
	t.Parallel()
	const parts = 16
	itest.MinibrokerBinary(t) // built before any source transaction opens
	for _, sc := range modeScenarios {
		for _, delay := range []time.Duration{0, 3 * time.Millisecond, 15 * time.Millisecond} {
			t.Run(fmt.Sprintf("%s/kill-after-%s", sc.mode, delay), func(t *testing.T) {
				a := minibrokertest.Start(t, minibrokertest.Topic("ledger", parts))
				defer openTxnSourceParts(t, a, parts)()
				dir := t.TempDir()
				b := itest.StartBinary(t, dir)
				admin := "--admin=" + b.HttpAddr
				for _, args := range [][]string{
					{"mirror", "create", "from-a", "--source", a.Addr(), "--mirror-config", mirror.SettingFailoverMode + "=" + string(sc.mode)},
					{"mirror", "start", "from-a", "--topics", "ledger"},
				} {
					if out, err := itest.RunCLI(t, append(args, admin)...); err != nil {
						t.Fatalf("%v: %v %s", args, err, out)
					}
				}
				cl := itest.NewClient(t, b.Addr)
				deadline := time.Now().Add(itest.Timeout)
				for p := int32(0); p < parts; p++ {
					for itest.EndOffset(t, cl, "ledger", p) < sc.mirroredEnd {
						if time.Now().After(deadline) {
							t.Fatalf("partition %d not mirrored up to %d", p, sc.mirroredEnd)
						}
						time.Sleep(20 * time.Millisecond)
					}
				}
				// The stop's answer says STOPPING is persisted; the kill
				// follows after delay.
				ac := adminclient.New(adminclient.Options{Addr: b.HttpAddr})
				if _, err := ac.StopMirror(t.Context(), "from-a", mirror.TopicsRequest{AllTopics: true}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(delay)
				b.Stop(t, syscall.SIGKILL)
				stopping, stoppedN := statesOnDisk(t, dir)

				b = itest.StartBinary(t, dir)
				admin = "--admin=" + b.HttpAddr
				if out, err := itest.RunCLI(t, "mirror", "stop", "from-a", "--all-topics", "--wait", admin); err != nil {
					t.Fatalf("stop --wait after the restart: %v\n%s", err, out)
				}
				t.Logf("killed %s after the stop answered: %d partitions STOPPING and %d STOPPED on disk; %d aborted transactions re-indexed at the restart",
					delay, stopping, stoppedN, strings.Count(b.Output(), "re-added an aborted transaction"))
				// The local producer (a fresh cluster's first id, as the
				// source's plain producer) writes after the barrier.
				local := itest.IdempotentProducer(t, b.Addr)
				for _, p := range []int32{0, parts - 1} {
					for i := range 3 {
						r := &kgo.Record{Topic: "ledger", Partition: p, Value: fmt.Appendf(nil, "b-%d", i)}
						if err := local.ProduceSync(context.Background(), r).FirstErr(); err != nil {
							t.Fatal(err)
						}
					}
				}
				local.Close()
				b.Stop(t, syscall.SIGKILL)
				for p := range parts {
					barriers, aborts := controlsOnDisk(t, filepath.Join(dir, fmt.Sprintf("ledger-%d", p)))
					if fmt.Sprint(barriers) != fmt.Sprint([]int64{sc.barrier}) || !slices.Equal(aborts, sc.markers) {
						t.Fatalf("partition %d: barriers %v, ABORT markers %v; want one barrier at %d, markers %v", p, barriers, aborts, sc.barrier, sc.markers)
					}
				}
				b = itest.StartBinary(t, dir)
				for _, p := range []int32{0, parts - 1} {
					got := itest.ReadValues(t, b.Addr, "ledger", p, 0)
					if want := itest.Concat(sc.kept, itest.Values("b", 3)); fmt.Sprint(got) != fmt.Sprint(want) {
						out, _, _ := itest.RunTool(t, "dump-log", "--json", filepath.Join(dir, fmt.Sprintf("ledger-%d", p)))
						t.Logf("dump-log of the partition:\n%s", out)
						t.Fatalf("partition %d holds %v, want %v", p, got, want)
					}
				}
				b.Stop(t, syscall.SIGTERM)
			})
		}
	}
}

// openTxnSourceParts is openTxnSource on every partition of ledger: the
// same offsets in each, the two transactions each spanning them all.
func openTxnSourceParts(t *testing.T, a itest.Node, parts int32) (abort func()) {
	t.Helper()
	ctx := context.Background()
	plain := itest.IdempotentProducer(t, a.Addr())
	// Open through the whole test (the kills and restarts of a loaded
	// machine can take longer than mirrorTxnProducer's 30 s timeout,
	// whose abort at the source would end the scenario).
	txn := func(id string) *kgo.Client {
		return itest.NewClient(t, a.Addr(), kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.TransactionTimeout(10*time.Minute))
	}
	t1, t2 := txn("t1"), txn("t2")
	each := func(cl *kgo.Client, v string) {
		for p := range parts {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	begin := func(cl *kgo.Client) {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
	}
	each(plain, "plain-0")
	each(plain, "plain-1")
	begin(t1)
	each(t1, "t1-0")
	each(plain, "late-0")
	begin(t2)
	each(t2, "t2-0")
	each(plain, "late-1")
	for p := range parts {
		if o := itest.MustPartition(t, a, "ledger", p).Offsets(); o.LastStable != 2 || o.HighWatermark != 6 {
			t.Fatalf("source partition %d offsets %+v, want LSO 2 and high watermark 6", p, o)
		}
	}
	return func() {
		t1.EndTransaction(ctx, kgo.TryAbort)
		t2.EndTransaction(ctx, kgo.TryAbort)
	}
}

// controlsOnDisk reads a stopped broker's partition directory with
// dump-log and returns the offsets of its barriers and ABORT markers.
func controlsOnDisk(t *testing.T, dir string) (barriers, aborts []int64) {
	t.Helper()
	out, errOut, code := itest.RunTool(t, "dump-log", "--json", dir)
	if code != 0 {
		t.Fatalf("dump-log %s: exit %d\n%s", dir, code, errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var b struct {
			Kind       string `json:"kind"`
			BaseOffset int64  `json:"base_offset"`
			Control    bool   `json:"control"`
			Record     *struct {
				Type string `json:"type"`
			} `json:"control_record"`
		}
		if err := json.Unmarshal([]byte(line), &b); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if b.Kind != "batch" || !b.Control || b.Record == nil {
			continue
		}
		switch b.Record.Type {
		case "MIRROR_PID_RESET":
			barriers = append(barriers, b.BaseOffset)
		case "ABORT":
			aborts = append(aborts, b.BaseOffset)
		}
	}
	return barriers, aborts
}

// statesOnDisk counts the partitions STOPPING and STOPPED in the state a
// stopped broker's __mirror_state holds (each partition's last record).
func statesOnDisk(t *testing.T, dir string) (stopping, stopped int) {
	t.Helper()
	state := mirrorStateOnDisk(t, dir)
	if len(state) == 0 {
		t.Fatal("no mirror state in __mirror_state")
	}
	for _, v := range state {
		stopping += bytes.Count(v, []byte(`"state":"STOPPING"`))
		stopped += bytes.Count(v, []byte(`"state":"STOPPED"`))
	}
	return stopping, stopped
}
