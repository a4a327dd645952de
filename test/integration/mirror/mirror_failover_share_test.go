package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/test/integration/itest"
)

// TestMirrorFailoverClampsShareGroups: a share group's start offset
// synced from the source (16: it acknowledged 0-15 there) lies past where
// the failover cuts the partition (11). STOPPING's clamp lowers it to the
// cut, durably, with the group offsets, so a share member on B gets B's
// first records b-0..b-4 (12..16). Negative control (NoGroupClamp): the
// start offset stays 16 and B's records 12..15 are never delivered.
func TestMirrorFailoverClampsShareGroups(t *testing.T) {
	for _, clamp := range []bool{true, false} {
		t.Run(fmt.Sprintf("clamp=%v", clamp), func(t *testing.T) {
			a, abort := itest.OpenTxnFailoverSource(t)
			defer abort()
			itest.SetShareEarliest(t, a.Addr(), "work")
			atp, _ := a.Broker().Topic("ledger")
			s := &itest.ShareRaw{T: t, Cl: itest.NewClient(t, a.Addr()), Group: "work", Member: "member-a", Topic: atp.ID, TopicName: "ledger"}
			s.Join()
			if got := s.Fetch(100); len(got) < 16 {
				t.Fatalf("source member acquired %d, want 0-15 at least", len(got))
			}
			s.Ack(0, 15, 1)
			s.Leave()
			if start := itest.DescribeShareStart(t, a.Addr(), "work", "ledger"); start != 16 {
				t.Fatalf("source share group starts at %d, want 16", start)
			}

			b := itest.StartBroker(t, itest.BrokerOptions{Mirror: mirror.WithTestHooks(mirror.Options{}, itest.MirrorHooks{NoGroupClamp: !clamp})})
			m := itest.MirrorOn(b)
			if err := m.Create("from-a", []string{a.Addr()}, ""); err != nil {
				t.Fatal(err)
			}
			if err := m.Start(t.Context(), "from-a", []string{"ledger"}); err != nil {
				t.Fatal(err)
			}
			itest.WaitMirrored(t, a, b, "ledger", 1)
			if n, err := m.SyncGroupOffsets(t.Context(), "from-a"); err != nil || n != 1 {
				t.Fatalf("sync: %d groups, %v; want 1", n, err)
			}
			if start := itest.DescribeShareStart(t, b.Addr(), "work", "ledger"); start != 16 {
				t.Fatalf("share group synced at %d, want 16", start)
			}
			if err := m.Stop("from-a", nil); err != nil {
				t.Fatal(err)
			}
			st, _ := m.Describe("from-a")
			if ps := st.Partitions[0]; ps.BarrierOffset != 11 {
				t.Fatalf("failover: %+v, want the barrier at 11", ps)
			}
			want := int64(11)
			if !clamp {
				want = 16
			}
			if start := itest.DescribeShareStart(t, b.Addr(), "work", "ledger"); start != want {
				t.Fatalf("share group at %d after the failover, want %d", start, want)
			}
			itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "ledger", 0, "b", 5) // 12..16

			btp, _ := b.B.Topic("ledger")
			d := &itest.ShareRaw{T: t, Cl: itest.NewClient(t, b.Addr()), Group: "work", Member: "member-b", Topic: btp.ID, TopicName: "ledger"}
			d.Join()
			seen := map[int64]bool{}
			deadline := time.Now().Add(20 * time.Second)
			for !seen[16] && time.Now().Before(deadline) {
				for o := range d.Fetch(100) {
					seen[o] = true
					d.Ack(o, o, 1)
				}
			}
			missed := 0
			for o := int64(12); o <= 16; o++ {
				if !seen[o] {
					missed++
				}
			}
			t.Logf("clamp=%v: delivered on B after the failover %v, %d of B's 5 records missed", clamp, seen, missed)
			switch {
			case clamp && missed != 0:
				t.Fatalf("%d of B's records 12..16 never delivered (got %v)", missed, seen)
			case !clamp && missed != 4:
				t.Fatalf("control: %d of B's records missed, want 4 (12..15)", missed)
			}
		})
	}
}
