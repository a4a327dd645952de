package share

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// share.auto.offset.reset by_duration:<ISO-8601 duration> (KIP-1106)
// starts a new share partition at the first record whose timestamp is
// at or after now minus the duration, as ListOffsets by timestamp finds
// it, and at the log end when no record is that recent. Ten records two
// hours old and ten five minutes old: PT1H delivers the recent ten, P1D
// all twenty, PT1M none (start at the end). Control: latest, what
// by_duration acted as when it was not implemented, delivers none of
// them, and earliest all.
func TestShareGroupResetByDuration(t *testing.T) {
	const topic = "sd"
	c := minibrokertest.Start(t, itest.FastShare(topic)...)
	prod := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	now := time.Now()
	for i := 0; i < 20; i++ {
		ts := now.Add(-2 * time.Hour)
		if i >= 10 {
			ts = now.Add(-5 * time.Minute)
		}
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}, Timestamp: ts}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()
	tp, _ := c.Broker().Topic(topic)

	for _, tc := range []struct {
		reset       string
		first, last int64 // -1: none delivered
		start       int64
	}{
		{"by_duration:PT1H", 10, 19, 10},
		{"by_duration:P1D", 0, 19, 0},
		{"by_duration:PT1M", -1, -1, 20},
		{"by_duration:PT0.5S", -1, -1, 20},
		{"latest", -1, -1, 20},
		{"earliest", 0, 19, 0},
	} {
		group := "g-" + tc.reset
		itest.SetGroupConfigs(t, c.Addr(), group, map[string]string{"share.auto.offset.reset": tc.reset})
		m := &itest.ShareRaw{T: t, Cl: itest.NewClient(t, c.Addr()), Group: group, Member: "member-" + tc.reset, Topic: tp.ID, TopicName: topic}
		m.Join()
		got := m.Fetch(100)
		offs := make([]int64, 0, len(got))
		for o := range got {
			offs = append(offs, o)
		}
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		switch {
		case tc.first < 0 && len(offs) != 0:
			t.Errorf("%s: delivered %v, want none", tc.reset, offs)
		case tc.first >= 0 && (len(offs) != int(tc.last-tc.first+1) || offs[0] != tc.first || offs[len(offs)-1] != tc.last):
			t.Errorf("%s: delivered %v, want %d..%d", tc.reset, offs, tc.first, tc.last)
		}
		if s := itest.DescribeShareStart(t, c.Addr(), group, topic); s != tc.start {
			t.Errorf("%s: share partition start %d, want %d", tc.reset, s, tc.start)
		}
		m.Cl.Close()
	}
}
