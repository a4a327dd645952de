package logtool

// The transaction log decoder: what kafka-dump-log
// --transaction-log-decoder prints for a record of __transaction_state
// (DumpLogSegments.TransactionLogMessageParser, which prints Kafka's
// TransactionLog.formatRecordKeyAndValue):
//
//	key: transaction_metadata::transactionalId=<id>
//	payload: producerId:<id>,producerEpoch:<epoch>,state=<State>,partitions=[<topic>-<n>,…],txnLastUpdateTimestamp=<ms>,txnTimeoutMs=<ms>
//
// a tombstone's payload <DELETE>, and for a key of another version
// "unknown::version=N" with no payload. The partitions are printed
// sorted (Kafka prints its set in hash order). Records are decoded with
// kmsg's TxnMetadataKey/TxnMetadataValue; a record that does not decode
// prints "Error at offset O, skipping. …" as the offsets decoder does.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnStateNames are Kafka's TransactionState names, by id.
var txnStateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// DecodeTxnRecord is the transaction log decoder's key and payload for
// one record; payload is "" when there is none to print.
func DecodeTxnRecord(offset int64, key, value []byte) (keyText, payload string) {
	if len(key) < 2 {
		return fmt.Sprintf("Error at offset %d, skipping. The key is %d bytes.", offset, len(key)), ""
	}
	if version := int16(key[0])<<8 | int16(key[1]); version != 0 {
		return fmt.Sprintf("unknown::version=%d", version), ""
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Sprintf("Error at offset %d, skipping. Key: %v", offset, err), ""
	}
	keyText = "transaction_metadata::transactionalId=" + k.TransactionalID
	if value == nil {
		return keyText, "<DELETE>"
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil || v.Version < 0 || v.Version > 1 {
		if err == nil {
			err = fmt.Errorf("unknown version %d", v.Version)
		}
		return keyText, fmt.Sprintf("Error at offset %d, skipping. Value: %v", offset, err)
	}
	state := fmt.Sprintf("TransactionState(%d)", v.State)
	if int(v.State) >= 0 && int(v.State) < len(txnStateNames) {
		state = txnStateNames[v.State]
	}
	var parts []string
	if state != "Empty" { // Kafka's reader ignores an Empty state's partitions
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, fmt.Sprintf("%s-%d", t.Topic, p))
			}
		}
	}
	sort.Strings(parts)
	return keyText, fmt.Sprintf("producerId:%d,producerEpoch:%d,state=%s,partitions=[%s],txnLastUpdateTimestamp=%d,txnTimeoutMs=%d",
		v.ProducerID, v.ProducerEpoch, state, strings.Join(parts, ","), v.LastUpdateTimestamp, v.TimeoutMillis)
}
