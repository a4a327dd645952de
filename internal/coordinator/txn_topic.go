package coordinator

// __transaction_state in Kafka's record schemas: the transaction
// coordinator's store of record, so Kafka's tools and decoders read it.
//
// Every state change of a transactional id is one record in partition
// PartitionFor(id, partitions) of the broker's __transaction_state
// (Kafka's partitionFor: abs(String.hashCode) % partitions):
//
//   - key: TransactionLogKey version 0 (Kafka's only version):
//     int16 version, string transactional id;
//   - value: TransactionLogValue version 1 (flexible, KIP-915): producer
//     id, producer epoch, timeout, state (Kafka's TransactionState ids,
//     the same numbers as TxnState), the partitions grouped by topic
//     (null when Empty, as Kafka writes it), last update and start
//     timestamps, and the tagged fields PreviousProducerId (tag 0,
//     TxnMetadata.LastProducerID), NextProducerId (tag 1) and
//     ClientTransactionVersion (tag 2), each written when it is not its
//     default, as Kafka's generated code writes them. NextProducerEpoch
//     (tag 3, KIP-939's two-phase commit) is never written: minibroker
//     has no prepared transactions.
//   - an expired transactional id is a tombstone (the key, a null
//     value), as Kafka's removeExpiredTransactionalIds writes it.
//
// Two of minibroker's fields have no place in Kafka's schema; they ride
// in tagged fields of minibroker's own, which Kafka's readers (and
// kmsg's) keep as unknown tags and otherwise ignore:
//
//   - tag 1000: the last producer epoch (int16), when not -1. Kafka does
//     not persist it (its loader sets NO_PRODUCER_EPOCH); minibroker does,
//     so that a retried InitProducerId answers the same after a restart
//     as before it.
//   - tag 1001: the consumer groups added to the open transaction by name
//     (a compact array of compact strings), when there are any. Kafka
//     adds each group's __consumer_offsets partition to the transaction's
//     partitions instead and writes a marker there; minibroker stages
//     transactional offsets in the group coordinator and completes them
//     by producer id, writing no marker to __consumer_offsets, so the
//     partitions of its records list only the data partitions.
//
// A value of version 0 (Kafka's until transaction.version 1) is read as
// well. Keys of another version are skipped, as Kafka's loader skips an
// unknown key; a value that does not decode is skipped and counted.

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnStateTopic is the broker's __transaction_state as the transaction
// coordinator writes it.
type TxnStateTopic interface {
	// Partitions is the topic's partition count.
	Partitions() int32
	// Append appends recs to partition p, in order, without an fsync,
	// and returns the partition's log end offset after them. A record
	// longer than the topic takes is refused with an error wrapping
	// ErrRecordTooLarge, nothing written.
	Append(p int32, recs []TopicRecord) (end int64, err error)
	// Sync returns once partition p is durable below end; concurrent
	// callers share one fsync (group commit).
	Sync(p int32, end int64) error
	// Err is the failure that took partition p offline for writes, nil
	// while it is writable.
	Err(p int32) error
	// Replay calls fn with each record of partition p, from its start.
	Replay(p int32, fn func(key, value []byte)) error
}

// Tags of minibroker's own in TransactionLogValue (see above).
const (
	txnTagLastProducerEpoch uint32 = 1000
	txnTagGroups            uint32 = 1001
)

// txnValueVersion is the TransactionLogValue version written.
const txnValueVersion = 1

func txnKey(id string) []byte {
	k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: id}
	return k.AppendTo(nil)
}

// txnValue encodes md; a Dead state is a tombstone (nil).
func txnValue(md TxnMetadata) []byte {
	if md.State == TxnDead {
		return nil
	}
	v := kmsg.NewTxnMetadataValue()
	v.Version = txnValueVersion
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = md.ProducerID, md.ProducerEpoch, md.TimeoutMs
	v.State = kmsg.TransactionState(md.State)
	v.LastUpdateTimestamp, v.StartTimestamp = md.LastUpdateMs, md.StartMs
	v.PreviousProducerID, v.NextProducerID = md.LastProducerID, md.NextProducerID
	v.ClientTransactionVersion = int16(md.ClientTxnVersion)
	if md.State != TxnEmpty {
		v.Topics = []kmsg.TxnMetadataValueTopic{} // not null: Kafka writes null only when Empty
		for _, tp := range md.Partitions {        // sorted by topic, then partition
			if n := len(v.Topics); n > 0 && v.Topics[n-1].Topic == tp.Topic {
				v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, tp.Partition)
				continue
			}
			v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
		}
	}
	if md.LastProducerEpoch != noProducerEpoch {
		v.UnknownTags.Set(txnTagLastProducerEpoch, kbin.AppendInt16(nil, md.LastProducerEpoch))
	}
	if len(md.Groups) > 0 {
		b := kbin.AppendCompactArrayLen(nil, len(md.Groups))
		for _, g := range md.Groups {
			b = kbin.AppendCompactString(b, g)
		}
		v.UnknownTags.Set(txnTagGroups, b)
	}
	return v.AppendTo(nil)
}

// errUnknownTxnKey: a key of a version this coordinator does not write.
var errUnknownTxnKey = errors.New("unknown transaction log key version")

// decodeTxnRecord reads one record of the topic: the id, and its state
// (ok false: a tombstone).
func decodeTxnRecord(key, value []byte) (id string, md TxnMetadata, ok bool, err error) {
	var k kmsg.TxnMetadataKey
	if len(key) < 2 || key[0] != 0 || key[1] != 0 {
		return "", md, false, errUnknownTxnKey
	}
	if err := k.ReadFrom(key); err != nil {
		return "", md, false, fmt.Errorf("key: %w", err)
	}
	if value == nil {
		return k.TransactionalID, md, false, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return k.TransactionalID, md, false, fmt.Errorf("value: %w", err)
	}
	if v.Version < 0 || v.Version > 1 {
		return k.TransactionalID, md, false, fmt.Errorf("value version %d", v.Version)
	}
	md = TxnMetadata{TransactionalID: k.TransactionalID, ProducerID: v.ProducerID, LastProducerID: v.PreviousProducerID,
		NextProducerID: v.NextProducerID, ProducerEpoch: v.ProducerEpoch, LastProducerEpoch: noProducerEpoch,
		TimeoutMs: v.TimeoutMillis, State: TxnState(v.State), StartMs: v.StartTimestamp, LastUpdateMs: v.LastUpdateTimestamp,
		ClientTxnVersion: int8(v.ClientTransactionVersion)}
	if md.State != TxnEmpty {
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				md.Partitions = append(md.Partitions, TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
		slices.SortFunc(md.Partitions, compareTP)
		md.Partitions = slices.Compact(md.Partitions)
	}
	var tagErr error
	v.UnknownTags.Each(func(tag uint32, b []byte) {
		r := kbin.Reader{Src: b}
		switch tag {
		case txnTagLastProducerEpoch:
			md.LastProducerEpoch = r.Int16()
		case txnTagGroups:
			n := r.CompactArrayLen()
			for i := int32(0); i < n && r.Ok(); i++ {
				md.Groups = append(md.Groups, r.CompactString())
			}
			sort.Strings(md.Groups)
			md.Groups = slices.Compact(md.Groups)
		default:
			return
		}
		if err := r.Complete(); err != nil && tagErr == nil {
			tagErr = fmt.Errorf("tag %d: %w", tag, err)
		}
	})
	switch {
	case tagErr != nil:
		return md.TransactionalID, md, false, tagErr
	case md.State < TxnEmpty || md.State > TxnDead:
		// PrepareEpochFence (7) is Kafka's; minibroker never writes it.
		return md.TransactionalID, md, false, fmt.Errorf("state %d", md.State)
	case md.TransactionalID == "" || md.ProducerID < 0:
		return md.TransactionalID, md, false, errors.New("empty transactional id or negative producer id")
	case md.ClientTxnVersion < 0 || md.ClientTxnVersion > TxnVersion2:
		return md.TransactionalID, md, false, fmt.Errorf("client transaction version %d", md.ClientTxnVersion)
	}
	if md.State == TxnDead {
		return md.TransactionalID, md, false, nil
	}
	return md.TransactionalID, md, true, nil
}

// txnTopicLoad is what reading the topic back found.
type txnTopicLoad struct {
	states  map[string]TxnMetadata
	records int // records read
	skipped int // records of another key version, or that did not decode
}

// loadTxnTopic reads every partition of t: the last record of an id
// wins, a tombstone removes it.
func loadTxnTopic(t TxnStateTopic) (txnTopicLoad, error) {
	l := txnTopicLoad{states: map[string]TxnMetadata{}}
	for p := range t.Partitions() {
		err := t.Replay(p, func(key, value []byte) {
			l.records++
			id, md, live, err := decodeTxnRecord(key, value)
			if err != nil {
				l.skipped++
				return
			}
			if live {
				l.states[id] = md
			} else {
				delete(l.states, id)
			}
		})
		if err != nil {
			return l, fmt.Errorf("reading __transaction_state: %w", err)
		}
	}
	return l, nil
}

// txnRecordsByPartition is the records writing states (and tombstones for
// the ids in gone) takes, per partition, in id order.
func txnRecordsByPartition(n int32, states map[string]TxnMetadata, gone []string) map[int32][]TopicRecord {
	out := map[int32][]TopicRecord{}
	for _, md := range sortedStates(states) {
		p := PartitionFor(md.TransactionalID, n)
		out[p] = append(out[p], TopicRecord{Key: txnKey(md.TransactionalID), Value: txnValue(md)})
	}
	sort.Strings(gone)
	for _, id := range gone {
		p := PartitionFor(id, n)
		out[p] = append(out[p], TopicRecord{Key: txnKey(id)})
	}
	return out
}

// writeTxnRecords appends recs and waits until they are durable.
func writeTxnRecords(t TxnStateTopic, recs map[int32][]TopicRecord) error {
	ends := map[int32]int64{}
	for p := range t.Partitions() {
		if len(recs[p]) == 0 {
			continue
		}
		end, err := t.Append(p, recs[p])
		if err != nil {
			return err
		}
		ends[p] = end
	}
	for p := range t.Partitions() {
		if end, ok := ends[p]; ok {
			if err := t.Sync(p, end); err != nil {
				return err
			}
		}
	}
	return nil
}

func sortedStates(states map[string]TxnMetadata) []TxnMetadata {
	out := make([]TxnMetadata, 0, len(states))
	for _, md := range states {
		out = append(out, md)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out
}
