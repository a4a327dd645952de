package itest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TxnEpoch is the producer epoch DescribeTransactions shows for id.
func TxnEpoch(t *testing.T, addr, id string) int16 {
	t.Helper()
	ds, err := kadm.NewClient(NewClient(t, addr)).DescribeTransactions(TxnCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := ds[id]
	if !ok || d.Err != nil {
		t.Fatalf("describe %s: %+v", id, d)
	}
	return d.ProducerEpoch
}
