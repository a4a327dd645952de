package admin

import (
	"context"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestDeletedTopicTakesItsOffsets: as in Kafka, deleting a topic deletes
// the committed offsets of it, so a topic recreated under the same name is
// not read from stale positions.
func TestDeletedTopicTakesItsOffsets(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("orders", 1), minibrokertest.Topic("other", 1))
	adm := kadm.NewClient(itest.NewClient(t, c.Addr()))
	ctx := context.Background()
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 3, LeaderEpoch: -1})
	os.Add(kadm.Offset{Topic: "other", Partition: 0, At: 5, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, "g", os); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	if _, err := adm.DeleteTopic(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	got, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := got.Lookup("orders", 0); ok && o.At >= 0 {
		t.Fatalf("recreated topic kept offset %d", o.At)
	}
	if o, ok := got.Lookup("other", 0); !ok || o.At != 5 {
		t.Fatalf("other topic's offset lost: %+v", o)
	}
}
