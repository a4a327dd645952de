package coordinator

import (
	"slices"
	"testing"
	"time"
)

// replayWithout loads log into a fresh core, leaving out the records of
// type skip (0: none), with image im, at now.
func replayWithout(log []byte, im *TopicImage, skip recordType, now time.Time) *groupCore {
	c := newGroupCore(GroupConfig{}, func(p string) string { return p })
	c.image = im
	c.replaying, c.replayNow = true, now
	scanFrames(append(groupLogHeader(), log...), func(r record) {
		if r.typ != skip {
			c.apply(r)
		}
	})
	c.replaying = false
	return c
}

// A regex subscription's resolution is persisted as Kafka's
// ConsumerGroupRegularExpression record: after a replay, with a matching
// topic created while the broker was down, the group still resolves the
// regex to what it was until its first refresh (the next tick), which
// then adds the new topic, rewrites the record and bumps the group epoch.
// When the last member using the regex leaves, the record is tombstoned.
// Negative control: replayed without the regex records, the group
// resolves the regex against the new topics at once.
func TestConsumerGroupRegexResolutionPersisted(t *testing.T) {
	h := newCGHarness(t, map[string]int32{"orders-1": 1, "other": 1})
	r := h.hb(ConsumerHeartbeatRequest{MemberID: "a", RebalanceTimeoutMs: 5000, SubscribedTopicRegex: strp("orders-.*"), Owned: []OwnedTopic{}})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if got := h.c.groups["g"].cg.regexes["orders-.*"]; got == nil || !slices.Equal(got.topics, []string{"orders-1"}) || got.version != int64(h.im.Gen) {
		t.Fatalf("resolution: %+v", got)
	}
	epoch := h.c.groups["g"].cg.epoch

	// orders-2 appears while the broker is down.
	h.setTopics(map[string]int32{"orders-1": 1, "other": 1, "orders-2": 2})
	c2 := replayWithout(h.log, h.im, 0, h.now)
	cg2 := c2.groups["g"].cg
	if got := cg2.topicsOf(cg2.members["a"], h.im); !slices.Equal(got, []string{"orders-1"}) {
		t.Fatalf("after the replay, before a refresh: %v, want [orders-1]", got)
	}
	if got := snapshotCG("g", cg2); got[2].typ != recCGRegex || !slices.Equal(got[2].cg.resolved.topics, []string{"orders-1"}) {
		t.Fatalf("snapshot: %+v", got[2])
	}
	// Negative control: without the records, the regex resolves anew.
	c3 := replayWithout(h.log, h.im, recCGRegex, h.now)
	if got := c3.groups["g"].cg.topicsOf(c3.groups["g"].cg.members["a"], h.im); !slices.Equal(got, []string{"orders-1", "orders-2"}) {
		t.Fatalf("negative control: %v", got)
	}

	c2.Tick(h.now)
	recs := c2.takeRecords()
	var rewrote bool
	for _, rec := range recs {
		if rec.typ == recCGRegex && rec.cg.resolved != nil && slices.Equal(rec.cg.resolved.topics, []string{"orders-1", "orders-2"}) {
			rewrote = true
		}
	}
	if !rewrote || cg2.epoch != epoch+1 || !slices.Equal(cg2.topicsOf(cg2.members["a"], h.im), []string{"orders-1", "orders-2"}) {
		t.Fatalf("refresh: rewrote %v epoch %d (was %d)", rewrote, cg2.epoch, epoch)
	}

	// The member leaves: the resolution is tombstoned.
	h.hb(ConsumerHeartbeatRequest{MemberID: "a", MemberEpoch: leaveEpoch})
	if len(h.c.groups["g"].cg.regexes) != 0 {
		t.Fatal("resolution kept after its last member left")
	}
	if c4 := replayWithout(h.log, h.im, 0, h.now); len(c4.groups["g"].cg.regexes) != 0 {
		t.Fatal("resolution back after a replay")
	}
	for _, rec := range []record{{typ: recCGRegex, group: "g", cg: &cgRecord{regex: "x.*", resolved: &resolvedRegex{topics: []string{"xa", "xb"}, version: 3, timestamp: 4}}}} {
		body := appendPayload([]byte{byte(rec.typ)}, &rec)
		back, err := decodeRecord(body)
		if err != nil || back.cg.regex != "x.*" || !slices.Equal(back.cg.resolved.topics, []string{"xa", "xb"}) || back.cg.resolved.timestamp != 4 {
			t.Fatalf("round trip: %+v %v", back.cg, err)
		}
		if s := formatCGRecord(back); s != `ConsumerGroupRegularExpression group="g" regularExpression="x.*" topics=[xa xb] version=3 timestamp=4` {
			t.Fatalf("dump: %s", s)
		}
	}
}
