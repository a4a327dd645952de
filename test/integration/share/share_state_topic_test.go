package share

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/share"
	"github.com/minibroker/minibroker/minibrokertest"
	"github.com/minibroker/minibroker/test/integration/itest"
)

// TestShareStateTopic: a share consumer's acknowledgements are records of
// __share_group_state that a plain kgo consumer reads and decodes
// (ShareSnapshot first, the group's key, the start offset reaching the
// records acknowledged), and a restarted broker resumes the share group
// at that start offset.
func TestShareStateTopic(t *testing.T) {
	const topic, group, n = "sst", "sst-g", 20
	c := minibrokertest.Start(t, itest.FastShare(topic)...)
	itest.SetShareEarliest(t, c.Addr(), group)
	prod := itest.NewClient(t, c.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl := newShareConsumer(t, c.Addr(), group, topic)
	got := 0
	for got < n && ctx.Err() == nil {
		recs := cl.PollRecords(ctx, 100).Records()
		for _, r := range recs {
			r.Ack(kgo.AckAccept)
		}
		got += len(recs)
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	if start := itest.DescribeShareStart(t, c.Addr(), group, topic); start != n {
		t.Fatalf("start offset %d after acknowledging %d", start, n)
	}

	rd := itest.NewClient(t, c.Addr(), kgo.ConsumeTopics("__share_group_state"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var types []int16
	last := int64(-1)
	for last != n && ctx.Err() == nil {
		for _, r := range rd.PollFetches(ctx).Records() {
			sr, err := share.DecodeStateRecord(r.Key, r.Value)
			if err != nil {
				t.Fatalf("offset %d: %v", r.Offset, err)
			}
			if sr.Group != group || sr.TP.Partition != 0 {
				t.Fatalf("record of %s partition %d", sr.Group, sr.TP.Partition)
			}
			types = append(types, sr.Type)
			last = sr.Start
		}
	}
	if len(types) < 2 || types[0] != share.RecordSnapshot || types[len(types)-1] != share.RecordUpdate {
		t.Fatalf("record types %v, want a snapshot then updates", types)
	}
	t.Logf("%d records: %v", len(types), types)

	c.Close()
	c2 := minibrokertest.Start(t, append(itest.FastShare(topic)[1:], minibrokertest.DataDir(c.DataDir()))...)
	if start := itest.DescribeShareStart(t, c2.Addr(), group, topic); start != n {
		t.Fatalf("start offset %d after the restart, want %d", start, n)
	}
}
