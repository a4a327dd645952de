package log

import (
	"encoding/binary"
	"hash/maphash"
)

// offsetMap is Kafka's SkimpyOffsetMap: the latest offset of each key of
// the dirty section, in a fixed buffer (log.cleaner.dedupe.buffer.size
// divided among log.cleaner.threads), so the cleaner's memory does not
// grow with the number of keys. A key is stored as a 16-byte digest next
// to an 8-byte offset (Kafka's 24-byte slot); slots are probed linearly.
// Two keys with the same digest would share a slot, as in Kafka.
//
// Deviation: Kafka's digest is the key's MD5; minibroker's is two 64-bit
// hash/maphash sums of the key under two random seeds drawn for each
// cleaner thread. MD5 was a third of the cleaner's CPU (two digests per
// record: the map's build and the filter) and maphash costs a fraction
// of it; the odds of two keys sharing a digest stay about 2^-128 a pair,
// and since the seeds are secret and change at every start, keys cannot
// be crafted to collide, which MD5 (unkeyed, with known collisions)
// allows. The cleaner stops filling it at
// loadFactor (log.cleaner.io.buffer.load.factor, 0.9) and cleans only the
// dirty offsets it covers; the rest waits for the next pass.
type offsetMap struct {
	seeds   [2]maphash.Seed
	slots   []byte // slot i: [24i, 24i+16) digest, [24i+16, 24i+24) offset+1 (0: empty)
	n       int    // slots
	entries int
	// latest is the last offset the map covers (Kafka's latestOffset).
	latest int64
}

const (
	digestSize    = 16
	offsetMapSlot = digestSize + 8
)

type digest [digestSize]byte

// newOffsetMap sizes a map to bufferBytes (at least one slot).
func newOffsetMap(bufferBytes int64) *offsetMap {
	n := max(int(bufferBytes/offsetMapSlot), 2)
	return &offsetMap{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		slots: make([]byte, n*offsetMapSlot), n: n, latest: -1}
}

func (m *offsetMap) digest(key []byte) digest {
	var d digest
	binary.BigEndian.PutUint64(d[:8], maphash.Bytes(m.seeds[0], key))
	binary.BigEndian.PutUint64(d[8:], maphash.Bytes(m.seeds[1], key))
	return d
}

func (m *offsetMap) clear() {
	clear(m.slots)
	m.entries, m.latest = 0, -1
}

// capacity is how many keys the cleaner puts in before it stops.
func (m *offsetMap) capacity(loadFactor float64) int { return max(int(float64(m.n)*loadFactor), 1) }

func (m *offsetMap) find(d *digest) int {
	i := int(binary.BigEndian.Uint64(d[:8]) % uint64(m.n))
	for {
		s := m.slots[i*offsetMapSlot:]
		if binary.BigEndian.Uint64(s[digestSize:]) == 0 || digest(s[:digestSize]) == *d {
			return i
		}
		i++
		if i == m.n {
			i = 0
		}
	}
}

// put records offset as the latest for key.
func (m *offsetMap) put(key []byte, offset int64) {
	d := m.digest(key)
	s := m.slots[m.find(&d)*offsetMapSlot:]
	if binary.BigEndian.Uint64(s[digestSize:]) == 0 {
		m.entries++
		copy(s, d[:])
	}
	binary.BigEndian.PutUint64(s[digestSize:], uint64(offset+1))
}

// get is the latest offset of key, -1 if the map does not hold it.
func (m *offsetMap) get(key []byte) int64 {
	d := m.digest(key)
	s := m.slots[m.find(&d)*offsetMapSlot:]
	return int64(binary.BigEndian.Uint64(s[digestSize:])) - 1
}

// utilization is the share of slots in use (Kafka's bufferUtilization).
func (m *offsetMap) utilization() float64 { return float64(m.entries) / float64(m.n) }
