package logtool

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The transaction log decoder prints what Kafka's
// TransactionLog.formatRecordKeyAndValue prints: the key, the value's
// fields, <DELETE> for a tombstone, unknown::version=N for another key
// version; a value that does not decode is an error line, never a panic.
func TestDecodeTxnRecord(t *testing.T) {
	k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: "tid"}
	key := k.AppendTo(nil)
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.ProducerEpoch, v.TimeoutMillis, v.State = 1, 1000, 3, 60000, 2
	v.LastUpdateTimestamp, v.StartTimestamp, v.NextProducerID = 1767225600001, 1767225600000, 1001
	v.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "orders", Partitions: []int32{1, 0}}, {Topic: "a", Partitions: []int32{7}}}
	empty := kmsg.NewTxnMetadataValue()
	empty.Version, empty.ProducerID, empty.TimeoutMillis = 0, 5, 1000
	for _, c := range []struct {
		key, value   []byte
		wantK, wantP string
	}{
		{key, v.AppendTo(nil), "transaction_metadata::transactionalId=tid",
			"producerId:1000,producerEpoch:3,state=PrepareCommit,partitions=[a-7,orders-0,orders-1],txnLastUpdateTimestamp=1767225600001,txnTimeoutMs=60000"},
		{key, empty.AppendTo(nil), "transaction_metadata::transactionalId=tid",
			"producerId:5,producerEpoch:0,state=Empty,partitions=[],txnLastUpdateTimestamp=0,txnTimeoutMs=1000"},
		{key, nil, "transaction_metadata::transactionalId=tid", "<DELETE>"},
		{[]byte{0, 3, 0, 0}, []byte{1}, "unknown::version=3", ""},
		{key, []byte{0, 1, 2}, "transaction_metadata::transactionalId=tid", "Error at offset 9, skipping. Value: response did not contain enough data to be valid"},
		{[]byte{0}, nil, "Error at offset 9, skipping. The key is 1 bytes.", ""},
	} {
		gk, gp := DecodeTxnRecord(9, c.key, c.value)
		if gk != c.wantK || gp != c.wantP {
			t.Errorf("got\n  %s\n  %s\nwant\n  %s\n  %s", gk, gp, c.wantK, c.wantP)
		}
	}
}

func FuzzDecodeTxnRecord(f *testing.F) {
	k := kmsg.TxnMetadataKey{TransactionalID: "t"}
	v := kmsg.NewTxnMetadataValue()
	v.Version = 1
	f.Add(k.AppendTo(nil), v.AppendTo(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) { DecodeTxnRecord(0, key, value) })
}
