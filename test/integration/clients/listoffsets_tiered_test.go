package clients

import (
	"context"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// ListOffsets v9+ with -5 (latest tiered, KIP-1005) answers offset -1 and
// epoch -1 without an error, as Kafka does when remote storage is off.
func TestListOffsetsLatestTiered(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("tiered", 1))
	cl := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("tiered"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int16{9, 10} {
		req := itest.ListOffsetsRequest("tiered", -5)
		req.Version = v
		rc := itest.DialRaw(t, c.Addr())
		rc.Write(itest.RequestFrame(req, 1))
		resp := kmsg.NewPtrListOffsetsResponse()
		resp.Version = v
		if err := resp.ReadFrom(rc.ReadResponse(1, true)); err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.Offset != -1 || p.LeaderEpoch != -1 {
			t.Fatalf("v%d -5: code %d offset %d epoch %d, want 0/-1/-1", v, p.ErrorCode, p.Offset, p.LeaderEpoch)
		}
	}
}
