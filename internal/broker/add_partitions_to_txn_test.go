package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestAddPartitionsToTxnForms: the client form (v0–v3) is answered as one
// transaction of the batched form (v4+), so the two give the same codes:
// an unknown partition gets UNKNOWN_TOPIC_OR_PARTITION and the others
// OPERATION_NOT_ATTEMPTED (nothing added); no transactional id gets
// INVALID_REQUEST everywhere; a fenced producer gets PRODUCER_FENCED from
// v2 on and INVALID_PRODUCER_EPOCH before; a good request adds the
// partition, which a verify-only v4 then finds in the transaction.
func TestAddPartitionsToTxnForms(t *testing.T) {
	b, _ := startSeamed(t, nil)
	if _, err := b.CreateTopic("t", 1, nil, [16]byte{}, false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clients := map[int16]*kgo.Client{}
	send := func(version int16, req kmsg.Request) kmsg.Response {
		t.Helper()
		cl := clients[version]
		if cl == nil {
			vs := kversion.Stable()
			vs.SetMaxKeyVersion(24, version)
			cl = newTxnTestClient(t, b.Addr(), kgo.MaxVersions(vs))
			clients[version] = cl
		}
		resp, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		return resp
	}
	initPID := func(id string) (int64, int16) {
		t.Helper()
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60_000
		for {
			// CONCURRENT_TRANSACTIONS while the open transaction is aborted.
			resp := send(4, req).(*kmsg.InitProducerIDResponse)
			if resp.ErrorCode == kerr.ConcurrentTransactions.Code && ctx.Err() == nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			if resp.ErrorCode != 0 {
				t.Fatalf("InitProducerId %s: %v", id, kerr.ErrorForCode(resp.ErrorCode))
			}
			return resp.ProducerID, resp.ProducerEpoch
		}
	}
	// add sends the partitions of t in the form of version and answers
	// "partition=CODE" for each, in order.
	add := func(version int16, id string, pid int64, epoch int16, verifyOnly bool, parts ...int32) string {
		t.Helper()
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		var out string
		note := func(p int32, code int16) {
			name := "NONE"
			if err := kerr.ErrorForCode(code); err != nil {
				name = err.(*kerr.Error).Message
			}
			out += fmt.Sprintf("%d=%s ", p, name)
		}
		if version < 4 {
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = "t", parts
			req.Topics = append(req.Topics, rt)
			resp := send(version, req).(*kmsg.AddPartitionsToTxnResponse)
			for _, st := range resp.Topics {
				for _, sp := range st.Partitions {
					note(sp.Partition, sp.ErrorCode)
				}
			}
			return out
		}
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, verifyOnly
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = "t", parts
		tx.Topics = append(tx.Topics, tt)
		req.Transactions = append(req.Transactions, tx)
		resp := send(version, req).(*kmsg.AddPartitionsToTxnResponse)
		for _, rt := range resp.Transactions {
			for _, st := range rt.Topics {
				for _, sp := range st.Partitions {
					note(sp.Partition, sp.ErrorCode)
				}
			}
		}
		return out
	}
	pid, epoch := initPID("forms")
	const refused = "0=OPERATION_NOT_ATTEMPTED 7=UNKNOWN_TOPIC_OR_PARTITION "
	for _, v := range []int16{0, 3, 4, 5} {
		if got := add(v, "forms", pid, epoch, false, 0, 7); got != refused {
			t.Errorf("v%d unknown partition: %q, want %q", v, got, refused)
		}
		if got := add(v, "", pid, epoch, false, 0); got != "0=INVALID_REQUEST " {
			t.Errorf("v%d no transactional id: %q", v, got)
		}
	}
	if got := add(4, "forms", pid, epoch, true, 0); got != "0=TRANSACTION_ABORTABLE " {
		t.Errorf("verify-only before any add: %q", got)
	}
	if got := add(3, "forms", pid, epoch, false, 0); got != "0=NONE " {
		t.Fatalf("v3 add: %q", got)
	}
	if got := add(4, "forms", pid, epoch, true, 0); got != "0=NONE " {
		t.Errorf("verify-only after the v3 add: %q", got)
	}
	// A second InitProducerId fences the first epoch.
	pid2, epoch2 := initPID("forms")
	if pid2 != pid || epoch2 <= epoch {
		t.Fatalf("InitProducerId again: pid %d epoch %d, was %d %d", pid2, epoch2, pid, epoch)
	}
	for v, want := range map[int16]string{1: "0=INVALID_PRODUCER_EPOCH ", 2: "0=PRODUCER_FENCED ", 3: "0=PRODUCER_FENCED ", 4: "0=PRODUCER_FENCED "} {
		if got := add(v, "forms", pid, epoch, false, 0); got != want {
			t.Errorf("v%d fenced: %q, want %q", v, got, want)
		}
	}
}
