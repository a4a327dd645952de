package coordinator

import (
	"encoding/binary"
	"hash/crc32"
)

// The old transaction log's encoding (txn_legacy.go), kept for the tests
// that write a data dir as an earlier version left it.

// legacyFrame frames one body: 4 length, 4 CRC-32C, body.
func legacyFrame(body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(body, castagnoli))
	return append(b, body...)
}

// legacyTxnLogFile is a whole file: the header, the epoch record, a
// record per state.
func legacyTxnLogFile(epoch int32, states ...TxnMetadata) []byte {
	data := []byte("MBTX\x00\x01\x00\x00")
	data = append(data, encodeEpochRecord(epoch)...)
	for _, md := range states {
		data = append(data, encodeTxnRecord(md)...)
	}
	return data
}

func encodeEpochBody(epoch int32) []byte {
	return binary.BigEndian.AppendUint32([]byte{txnRecordEpoch}, uint32(epoch))
}

// encodeEpochRecord is the framed epoch record.
func encodeEpochRecord(epoch int32) []byte { return legacyFrame(encodeEpochBody(epoch)) }

// encodeTxnRecord is the framed state record of md.
func encodeTxnRecord(md TxnMetadata) []byte { return legacyFrame(encodeTxnState(md)) }

func appendString16(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func encodeTxnState(md TxnMetadata) []byte {
	typ := byte(txnRecordState)
	v2 := md.ClientTxnVersion != 0 || md.NextProducerID >= 0
	if v2 {
		typ = txnRecordStateV2
	}
	b := []byte{typ}
	b = appendString16(b, md.TransactionalID)
	b = binary.BigEndian.AppendUint64(b, uint64(md.ProducerID))
	b = binary.BigEndian.AppendUint64(b, uint64(md.LastProducerID))
	b = binary.BigEndian.AppendUint16(b, uint16(md.ProducerEpoch))
	b = binary.BigEndian.AppendUint16(b, uint16(md.LastProducerEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(md.TimeoutMs))
	b = append(b, byte(md.State))
	b = binary.BigEndian.AppendUint64(b, uint64(md.StartMs))
	b = binary.BigEndian.AppendUint64(b, uint64(md.LastUpdateMs))
	b = binary.BigEndian.AppendUint32(b, uint32(len(md.Partitions)))
	for _, tp := range md.Partitions {
		b = appendString16(b, tp.Topic)
		b = binary.BigEndian.AppendUint32(b, uint32(tp.Partition))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(md.Groups)))
	for _, g := range md.Groups {
		b = appendString16(b, g)
	}
	if v2 {
		b = binary.BigEndian.AppendUint64(b, uint64(md.NextProducerID))
		b = append(b, byte(md.ClientTxnVersion))
	}
	return b
}
