package coordinator

// Where the transaction coordinator starts from, and the upgrade from the
// transaction log of earlier versions.
//
// The states are in __transaction_state (txn_topic.go). Two things that
// are not a transactional id's state live beside it in the data dir:
//
//   - the coordinator epoch, in txn-coordinator-epoch (below): bumped and
//     written durably at every start that has state, so the markers this
//     incarnation writes carry a coordinator epoch above every earlier
//     one's (a partition fences a marker whose coordinator epoch is older
//     than its producer's last). Kafka's coordinator epoch is the leader
//     epoch of the __transaction_state partition, which a single node
//     that never changes leader would not bump. A start with no state
//     writes nothing (epoch 0); the first state change writes the file
//     before its record, so a topic that holds the coordinator's records
//     always has the file beside it.
//   - the producer id blocks, in producer-ids (producerid.go), unchanged by the upgrade:
//     a block of 1000 ids is reserved durably before any id of it is
//     handed out, so ids never repeat across restarts and crashes. Kafka
//     keeps this in its controller (AllocateProducerIds); on one node
//     there is no controller.
//
// Upgrade. A data dir written by an earlier version has
// transaction-state.log (txn_legacy.go) and no txn-coordinator-epoch.
// While the old file exists it is the state: a start that finds it
//
//  1. writes txn-coordinator-epoch with an epoch above the file's (temp
//     file, fsync, rename, directory fsync);
//  2. writes every state of the file to __transaction_state, and a
//     tombstone for any id the topic has that the file does not (a topic
//     written by an upgrade cut short, or by a client of an older
//     minibroker, is overwritten), and waits for the partitions' fsync;
//  3. removes the file and fsyncs the directory.
//
// A kill -9 anywhere before 3 leaves the file, and the next start runs
// the upgrade again from it (the records it wrote again are the same
// states, the last wins); after 3 the topic holds every state durably.
// The coordinator answers nothing before the upgrade ends.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"

	"github.com/minibroker/minibroker/internal/vfs"
)

// txn-coordinator-epoch:
//
//	0  4  magic "MBCE"
//	4  2  version (1)
//	6  4  coordinator epoch
//	10 4  CRC-32C of bytes 0..9
const (
	txnEpochFile    = "txn-coordinator-epoch"
	txnEpochMagic   = "MBCE"
	txnEpochVersion = 1
	txnEpochLen     = 14
)

// ErrTxnEpochMissing: __transaction_state holds the coordinator's states
// but txn-coordinator-epoch is gone; the coordinator cannot know an
// epoch above the markers already written, and does not start.
var ErrTxnEpochMissing = errors.New("coordinator: " + txnEpochFile + " is missing while __transaction_state holds transactional ids")

func readTxnEpoch(fs vfs.FS, dir string) (epoch int32, ok bool, err error) {
	b, err := vfs.ReadFile(fs, filepath.Join(dir, txnEpochFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return -1, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("read %s: %w", txnEpochFile, err)
	}
	if len(b) != txnEpochLen || string(b[:4]) != txnEpochMagic || binary.BigEndian.Uint16(b[4:]) != txnEpochVersion ||
		crc32.Checksum(b[:10], castagnoli) != binary.BigEndian.Uint32(b[10:]) || int32(binary.BigEndian.Uint32(b[6:])) < 0 {
		return 0, false, fmt.Errorf("%w: %s", ErrTxnLogCorrupt, txnEpochFile)
	}
	return int32(binary.BigEndian.Uint32(b[6:])), true, nil
}

func writeTxnEpoch(fs vfs.FS, dir string, epoch int32) error {
	b := make([]byte, txnEpochLen)
	copy(b, txnEpochMagic)
	binary.BigEndian.PutUint16(b[4:], txnEpochVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(epoch))
	binary.BigEndian.PutUint32(b[10:], crc32.Checksum(b[:10], castagnoli))
	if err := vfs.WriteFileAtomic(fs, dir, filepath.Join(dir, txnEpochFile), b); err != nil {
		return fmt.Errorf("write %s: %w", txnEpochFile, err)
	}
	return nil
}

func removeDurably(fs vfs.FS, dir, name string) error {
	if err := fs.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	if err := fs.SyncDir(dir); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// txnStart is what the coordinator starts from.
type txnStart struct {
	states       map[string]TxnMetadata
	epoch        int32
	epochDurable bool // txn-coordinator-epoch holds epoch
	read         int  // records read from the topic
	skipped      int  // of them, not the coordinator's (another key version, undecodable)
	migrated     bool // the old transaction log was moved into the topic
	torn         int  // bytes of the old log's torn tail ignored
}

// openTxnState reads the coordinator's state: the topic, or the old
// transaction log, which it then moves into the topic (see above).
func openTxnState(fs vfs.FS, dir string, topic TxnStateTopic, k knobs) (txnStart, error) {
	var s txnStart
	legacy, err := readLegacyTxnLog(fs, dir)
	if err != nil {
		return s, err
	}
	fileEpoch, hasFile, err := readTxnEpoch(fs, dir)
	if err != nil {
		return s, err
	}
	load, err := loadTxnTopic(topic)
	if err != nil {
		return s, err
	}
	s.read, s.skipped = load.records, load.skipped
	if !legacy.exists {
		s.states = load.states
		switch {
		case hasFile:
			s.epoch = fileEpoch + 1
		case len(load.states) > 0:
			return s, ErrTxnEpochMissing
		default:
			return s, nil // epoch 0, written with the first state
		}
		if err := writeTxnEpoch(fs, dir, s.epoch); err != nil {
			return s, err
		}
		s.epochDurable = true
		return s, nil
	}

	if k.removeLegacyFirst {
		if err := removeDurably(fs, dir, txnLogFile); err != nil {
			return s, err
		}
	}
	s.states, s.migrated, s.torn = legacy.states, true, legacy.torn
	s.epoch = max(legacy.epoch, fileEpoch) + 1
	if err := writeTxnEpoch(fs, dir, s.epoch); err != nil {
		return s, err
	}
	s.epochDurable = true
	var gone []string
	for id := range load.states {
		if _, ok := legacy.states[id]; !ok {
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	if err := writeTxnRecords(topic, txnRecordsByPartition(topic.Partitions(), legacy.states, gone)); err != nil {
		return s, fmt.Errorf("moving %s into __transaction_state: %w", txnLogFile, err)
	}
	if err := removeDurably(fs, dir, txnLogFile); err != nil {
		return s, err
	}
	return s, nil
}
