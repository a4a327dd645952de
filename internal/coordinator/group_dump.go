package coordinator

import (
	"fmt"
	"io"
	"strings"
)

// DumpGroupLog writes the group log file's records to w, one line each,
// for `minibroker dump-log` (as kafka-dump-log.sh decodes
// __consumer_offsets with its offsets decoder).
func DumpGroupLog(w io.Writer, data []byte) error {
	if err := checkGroupLogHeader(data); err != nil {
		return err
	}
	fmt.Fprintf(w, "group log version %d, %d bytes\n", groupLogVersion, len(data))
	end, damaged := scanFrames(data, func(r record) {
		fmt.Fprintln(w, formatRecord(r))
	})
	for _, d := range damaged {
		fmt.Fprintf(w, "damaged bytes %d..%d (skipped)\n", d.From, d.To)
	}
	if end < len(data) {
		fmt.Fprintf(w, "torn tail at byte %d (%d bytes)\n", end, len(data)-end)
	}
	return nil
}

func formatRecord(r record) string {
	if isCGRecord(r.typ) {
		return formatCGRecord(r)
	}
	tp := fmt.Sprintf("%s-%d", r.tp.Topic, r.tp.Partition)
	om := fmt.Sprintf("offset=%d leaderEpoch=%d metadata=%q commitTimestamp=%d", r.offset.Offset, r.offset.LeaderEpoch, r.offset.Metadata, r.offset.CommitTimestamp)
	switch r.typ {
	case recOffsetCommit:
		return fmt.Sprintf("OffsetCommit group=%q partition=%s %s", r.group, tp, om)
	case recOffsetDelete:
		return fmt.Sprintf("OffsetDelete group=%q partition=%s", r.group, tp)
	case recGroupMetadata:
		m := r.meta
		var ms []string
		for _, mm := range m.members {
			ms = append(ms, fmt.Sprintf("{id=%s instance=%q client=%q host=%s session=%dms rebalance=%dms subscription=%dB assignment=%dB}",
				mm.id, mm.instanceID, mm.clientID, mm.clientHost, mm.sessionTimeoutMs, mm.rebalanceTimeoutMs, len(mm.subscription), len(mm.assignment)))
		}
		return fmt.Sprintf("GroupMetadata group=%q state=%s protocolType=%q protocol=%q leader=%q generation=%d stateTimestamp=%d members=[%s]",
			r.group, m.state, m.protocolType, m.protocol, m.leader, m.generation, m.stateSince, strings.Join(ms, " "))
	case recGroupDelete:
		return fmt.Sprintf("GroupDelete group=%q", r.group)
	case recTxnStage:
		return fmt.Sprintf("TxnOffsetStage group=%q producerId=%d producerEpoch=%d partition=%s %s", r.group, r.producerID, r.producerEpoch, tp, om)
	case recTxnComplete:
		result := "ABORT"
		if r.commit {
			result = "COMMIT"
		}
		return fmt.Sprintf("TxnOffsetComplete producerId=%d result=%s", r.producerID, result)
	}
	return fmt.Sprintf("record type %d", r.typ)
}
