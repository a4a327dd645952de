package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"

	"github.com/minibroker/minibroker/internal/vfs"
)

// ProducerIDBlockSize is how many ids are reserved durably at a time, as
// Kafka's controller hands out blocks of 1000 (AllocateProducerIds).
const ProducerIDBlockSize = 1000

// producerIDFile is the durable high-water mark of reserved producer ids.
//
//	0  4  magic "MBPI"
//	4  2  version (1)
//	6  8  next unreserved producer id
//	14 4  CRC-32C of bytes 0..13
const (
	producerIDFile    = "producer-ids"
	producerIDMagic   = "MBPI"
	producerIDVersion = 1
	producerIDLen     = 18
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrProducerIDsCorrupt means the reservation file cannot be trusted.
var ErrProducerIDsCorrupt = errors.New("coordinator: producer-ids file corrupt")

// ProducerIDs hands out producer ids from 0 upward, never the same id
// twice across restarts and crashes: a block is reserved on disk (fsynced)
// before any id in it is handed out.
type ProducerIDs struct {
	fs  vfs.FS
	dir string

	mu       sync.Mutex // guards next and reserved
	next     int64
	reserved int64 // ids below this are reserved on disk
}

// OpenProducerIDs loads the reservation in dir. A crash loses at most the
// unused rest of a block, never repeats an id.
func OpenProducerIDs(fs vfs.FS, dir string) (*ProducerIDs, error) {
	p := &ProducerIDs{fs: fs, dir: dir}
	b, err := vfs.ReadFile(fs, filepath.Join(dir, producerIDFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return p, nil
	case err != nil:
		return nil, fmt.Errorf("read producer ids: %w", err)
	}
	next, err := decodeProducerIDs(b)
	if err != nil {
		return nil, err
	}
	p.next, p.reserved = next, next
	return p, nil
}

func decodeProducerIDs(b []byte) (int64, error) {
	if len(b) != producerIDLen || string(b[:4]) != producerIDMagic ||
		binary.BigEndian.Uint16(b[4:]) != producerIDVersion ||
		crc32.Checksum(b[:14], crcTable) != binary.BigEndian.Uint32(b[14:]) {
		return 0, ErrProducerIDsCorrupt
	}
	next := int64(binary.BigEndian.Uint64(b[6:]))
	if next < 0 {
		return 0, ErrProducerIDsCorrupt
	}
	return next, nil
}

func encodeProducerIDs(next int64) []byte {
	b := make([]byte, producerIDLen)
	copy(b, producerIDMagic)
	binary.BigEndian.PutUint16(b[4:], producerIDVersion)
	binary.BigEndian.PutUint64(b[6:], uint64(next))
	binary.BigEndian.PutUint32(b[14:], crc32.Checksum(b[:14], crcTable))
	return b
}

// Next returns a fresh producer id.
func (p *ProducerIDs) Next() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.reserved {
		upTo := p.next + ProducerIDBlockSize
		if err := vfs.WriteFileAtomic(p.fs, p.dir, filepath.Join(p.dir, producerIDFile), encodeProducerIDs(upTo)); err != nil {
			return -1, fmt.Errorf("reserve producer ids: %w", err)
		}
		p.reserved = upTo
	}
	id := p.next
	p.next++
	return id, nil
}
