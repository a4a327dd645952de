package mirror

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minibroker/minibroker/internal/mirror"
)

// committedOffset is a group's committed offset for ledger-0 (-1: none).
func committedOffset(t *testing.T, addr, group string) int64 {
	t.Helper()
	resp, err := kadm.NewClient(itest.NewClient(t, addr)).FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := resp.Lookup("ledger", 0)
	if !ok {
		return -1
	}
	return o.At
}

// failoverGroupsScenario mirrors the open-transaction source to a fresh B
// (started with mopts), syncs the groups' offsets (16), fails over (cut at
// 11, barrier at 11) and writes b-0..b-4 at 12..16 on B.
func failoverGroupsScenario(t *testing.T, mopts mirror.Options, groups ...string) *itest.RawCluster {
	t.Helper()
	a, abort := itest.OpenTxnFailoverSource(t, groups...)
	defer abort()
	b := itest.StartBroker(t, itest.BrokerOptions{Mirror: mopts})
	m := itest.MirrorOn(b)
	if err := m.Create("from-a", []string{a.Addr()}, ""); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context(), "from-a", []string{"ledger"}); err != nil {
		t.Fatal(err)
	}
	itest.WaitMirrored(t, a, b, "ledger", 1)
	if n, err := m.SyncGroupOffsets(t.Context(), "from-a"); err != nil || n != len(groups) {
		t.Fatalf("sync: %d groups, %v", n, err)
	}
	for _, g := range groups {
		if got := committedOffset(t, b.Addr(), g); got != 16 {
			t.Fatalf("%s synced at %d, want 16", g, got)
		}
	}
	if err := m.Stop("from-a", nil); err != nil {
		t.Fatal(err)
	}
	st, _ := m.Describe("from-a")
	if ps := st.Partitions[0]; ps.BarrierOffset != 11 || ps.LostAtFailover != 5 {
		t.Fatalf("failover: %+v, want the barrier at 11 after cutting 5", ps)
	}
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "ledger", 0, "b", 5) // 12..16
	return b
}

// resumeAndRead starts a group member of the client kind on B and returns
// the data records it reads until it has b-4 (the barrier, which kafka-go
// hands to the application, is left out).
func resumeAndRead(t *testing.T, client, addr, group string) []itest.CompatRecord {
	t.Helper()
	var member itest.CompatMember
	switch client {
	case "sarama":
		member = itest.StartSaramaMember(t, []string{addr}, group, "ledger")
	case "kafka-go":
		member = itest.StartKafkagoMember(t, addr, group, "ledger")
	case "kgo":
		member = itest.StartKgoMember(t, addr, group, "ledger")
	case "kgo-848":
		member = startKgo848Member(t, addr, group, "ledger")
	}
	defer member.Close(t)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		recs := member.Records()
		if len(recs) > 0 && recs[len(recs)-1].Value == "b-4" {
			var data []itest.CompatRecord
			for _, r := range recs {
				if r.Offset != 11 { // the barrier
					data = append(data, r)
				}
			}
			return data
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s (group %s) never read b-4; read %v", client, group, member.Records())
	return nil
}

// TestMirrorFailoverClampsSyncedGroupOffsets: a group's
// offset synced from the source (16) lies past where the failover cuts the
// partition (the local LSO, 11). STOPPING lowers it to the cut, durably,
// before the partition becomes writable, so sarama and kafka-go's group
// Reader (which check no leader epoch) and kgo, a classic member and a
// KIP-848 one, resume at the barrier and read B's first
// records. An offset committed on B after the failover is
// left alone. The negative control runs the same failover without the
// clamp: the offset stays 16 and sarama skips B's records 12..15.
func TestMirrorFailoverClampsSyncedGroupOffsets(t *testing.T) {
	t.Parallel()
	clients := []string{"sarama", "kafka-go", "kgo", "kgo-848"}
	b := failoverGroupsScenario(t, mirror.Options{}, clients...)
	for _, c := range clients {
		if got := committedOffset(t, b.Addr(), c); got != 11 {
			t.Fatalf("group %s at %d after the failover, want the barrier's offset 11", c, got)
		}
	}
	for _, c := range clients {
		recs := resumeAndRead(t, c, b.Addr(), c)
		var got []string
		for _, r := range recs {
			got = append(got, r.Value)
		}
		if strings.Join(got, ",") != strings.Join(itest.Values("b", 5), ",") || recs[0].Offset != 12 {
			t.Fatalf("%s resumed with %v (first offset %d), want b-0..b-4 from 12", c, got, recs[0].Offset)
		}
	}

	// Offsets committed on B after the failover are B's own: a later
	// sync and a restart leave them as they are.
	adm := kadm.NewClient(itest.NewClient(t, b.Addr()))
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "ledger", Partition: 0, At: 14, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(t.Context(), "sarama", os); err != nil || r.Error() != nil {
		t.Fatalf("commit on B: %v %v", err, r.Error())
	}
	if _, err := itest.MirrorOn(b).SyncGroupOffsets(t.Context(), "from-a"); err != nil {
		t.Fatal(err)
	}
	b.CrashAndRestart(mirror.Options{})
	if got := committedOffset(t, b.Addr(), "sarama"); got != 14 {
		t.Fatalf("B's own commit changed to %d, want 14", got)
	}
}

func TestMirrorFailoverWithoutGroupClamp(t *testing.T) {
	t.Parallel()
	b := failoverGroupsScenario(t, mirror.WithTestHooks(mirror.Options{}, itest.MirrorHooks{NoGroupClamp: true}), "sarama")
	if got := committedOffset(t, b.Addr(), "sarama"); got != 16 {
		t.Fatalf("negative control: group at %d, want the unclamped 16", got)
	}
	recs := resumeAndRead(t, "sarama", b.Addr(), "sarama")
	if len(recs) != 1 || recs[0].Offset != 16 {
		t.Fatalf("negative control: sarama read %v, want only b-4 at 16 (b-0..b-3 skipped)", recs)
	}
}

// TestMirrorCrashBeforeGroupClamp: the broker is killed after STOPPING cut
// the log and persisted the cut, before it clamped the group offsets; the
// failover resumed at restart clamps them before the partition becomes
// writable.
func TestMirrorCrashBeforeGroupClamp(t *testing.T) {
	t.Parallel()
	for _, step := range []mirror.StopStep{mirror.StepClamp, mirror.StepBarrier, mirror.StepStopped} {
		t.Run(string(step), func(t *testing.T) {
			a, abort := itest.OpenTxnFailoverSource(t, "g")
			defer abort()
			crashAt := mirror.WithTestHooks(mirror.Options{}, itest.MirrorHooks{StopStep: func(s mirror.StopStep, _ string, _ int32) error {
				if s == step {
					return itest.ErrCrash
				}
				return nil
			}})
			b := itest.StartBroker(t, itest.BrokerOptions{Mirror: crashAt})
			m := itest.MirrorOn(b)
			if err := m.Create("from-a", []string{a.Addr()}, ""); err != nil {
				t.Fatal(err)
			}
			if err := m.Start(t.Context(), "from-a", []string{"ledger"}); err != nil {
				t.Fatal(err)
			}
			itest.WaitMirrored(t, a, b, "ledger", 1)
			if _, err := m.SyncGroupOffsets(t.Context(), "from-a"); err != nil {
				t.Fatal(err)
			}
			if err := m.Stop("from-a", nil); err == nil {
				t.Fatal("stop did not crash")
			}
			if got := itest.LogEnd(b, "ledger", 0); step == mirror.StepClamp && got != 11 {
				t.Fatalf("crashed after the cut with the log ending at %d, want 11", got)
			}
			b.CrashAndRestart(mirror.Options{})
			st, _ := itest.MirrorOn(b).Describe("from-a")
			if ps := st.Partitions[0]; ps.State != mirror.Stopped || ps.BarrierOffset != 11 {
				t.Fatalf("after restart: %+v", ps)
			}
			if got := committedOffset(t, b.Addr(), "g"); got != 11 {
				t.Fatalf("group at %d after the resumed failover, want 11", got)
			}
		})
	}
}
