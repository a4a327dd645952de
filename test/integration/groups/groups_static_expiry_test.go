package groups

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestGroupsStaticMembersExpireAfterSession: static members
// (group.instance.id) close without LeaveGroup, as librdkafka and kgo do;
// they stay in their groups (DeleteGroups answers NON_EMPTY_GROUP) until
// their session times out, then the coordinator removes them, as Kafka's
// heartbeat expiration does, and the groups can be deleted. Three groups:
// a librdkafka member, a kgo member, and two librdkafka members together.
func TestGroupsStaticMembersExpireAfterSession(t *testing.T) {
	const topic, session = "gse", 5 * time.Second
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 4),
		minibrokertest.Set("group.min.session.timeout.ms", "1000"))
	itest.GroupsProduce(t, c.Addr(), topic, "a", 40)
	adm := kadm.NewClient(itest.NewClient(t, c.Addr()))

	type closer func()
	rdkMember := func(group, instance string) closer {
		cons, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": c.Addr(), "group.id": group,
			"group.instance.id": instance, "session.timeout.ms": int(session / time.Millisecond),
			"heartbeat.interval.ms": 300, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100})
		if err != nil {
			t.Fatal(err)
		}
		if err := cons.Subscribe(topic, nil); err != nil {
			t.Fatal(err)
		}
		// librdkafka serves rebalances only while the application polls.
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				cons.ReadMessage(100 * time.Millisecond)
			}
		}()
		return func() {
			close(stop)
			<-done
			if err := cons.Close(); err != nil {
				t.Errorf("close %s: %v", instance, err)
			}
		}
	}
	kgoMember := func(group, instance string) closer {
		m := newGroupMember(t, c.Addr(), group, topic, kgo.InstanceID(instance), kgo.SessionTimeout(session),
			kgo.HeartbeatInterval(300*time.Millisecond))
		itest.WaitFor(t, "the kgo static member assigned", func() bool {
			m.pollInto(t, map[string]int{}, new(int))
			return m.assignment() > 0
		})
		return m.cl.Close
	}

	groups := map[string][]closer{}
	groups["gse-rdk"] = []closer{rdkMember("gse-rdk", "rdk-1")}
	groups["gse-kgo"] = []closer{kgoMember("gse-kgo", "kgo-1")}
	groups["gse-rdk2"] = []closer{rdkMember("gse-rdk2", "rdk2-1"), rdkMember("gse-rdk2", "rdk2-2")}
	for g, closers := range groups {
		itest.WaitFor(t, g+" stable, every member assigned", func() bool {
			d, err := adm.DescribeGroups(context.Background(), g)
			if err != nil || d[g].State != "Stable" || len(d[g].Members) != len(closers) {
				return false
			}
			for _, m := range d[g].Members {
				if a, ok := m.Assigned.AsConsumer(); !ok || len(a.Topics) == 0 {
					return false
				}
			}
			return true
		})
	}

	// Each group's members are closed, then at once the group is checked:
	// still there (static members do not leave), not deletable.
	ctx := context.Background()
	closeStart, closeEnd := map[string]time.Time{}, map[string]time.Time{}
	for g, closers := range groups {
		closeStart[g] = time.Now()
		for _, cl := range closers {
			cl()
		}
		closeEnd[g] = time.Now()
		d, err := adm.DescribeGroups(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(d[g].Members); n != len(closers) {
			t.Fatalf("%s right after its static members closed: %d members, want %d (a static member does not leave)", g, n, len(closers))
		}
		r, err := adm.DeleteGroups(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(r[g].Err, kerr.NonEmptyGroup) {
			t.Fatalf("DeleteGroups %s within the session: %v, want NON_EMPTY_GROUP", g, r[g].Err)
		}
	}

	deleted := map[string]time.Time{}
	deadline := time.Now().Add(session + 8*time.Second)
	for len(deleted) < len(groups) && time.Now().Before(deadline) {
		for g := range groups {
			if _, ok := deleted[g]; ok {
				continue
			}
			r, err := adm.DeleteGroups(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case r[g].Err == nil:
				deleted[g] = time.Now()
			case !errors.Is(r[g].Err, kerr.NonEmptyGroup):
				t.Fatalf("DeleteGroups %s: %v", g, r[g].Err)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for g := range groups {
		at, ok := deleted[g]
		if !ok {
			d, _ := adm.DescribeGroups(ctx, g)
			t.Errorf("%s: static members still in the group %v after they closed (session %v): state %s, %d members",
				g, time.Since(closeEnd[g]).Round(100*time.Millisecond), session, d[g].State, len(d[g].Members))
			continue
		}
		// Members heartbeat (every 300ms) until their close starts; the
		// coordinator checks sessions every 100ms. The upper bound leaves
		// room for a loaded machine.
		if early, late := at.Sub(closeStart[g]), at.Sub(closeEnd[g]); early < session-500*time.Millisecond || late > session+5*time.Second {
			t.Errorf("%s deletable %v after its members' close began, %v after it ended: want about the session timeout %v",
				g, early, late, session)
		}
		t.Logf("%s: members removed and group deleted %v after close", g, at.Sub(closeEnd[g]).Round(10*time.Millisecond))
	}
}
