package log

import (
	"crypto/md5"
	"encoding/binary"
)

// offsetMap is Kafka's SkimpyOffsetMap: the latest offset of each key of
// the dirty section, in a fixed buffer (log.cleaner.dedupe.buffer.size
// divided among log.cleaner.threads), so the cleaner's memory does not
// grow with the number of keys. A key is stored as its MD5 digest (16
// bytes, Kafka's default hash) next to an 8-byte offset; slots are probed
// linearly. Two keys with the same digest would share a slot, as in Kafka
// (with 2^-128 odds per pair). The cleaner stops filling it at
// loadFactor (log.cleaner.io.buffer.load.factor, 0.9) and cleans only the
// dirty offsets it covers; the rest waits for the next pass.
type offsetMap struct {
	slots   []byte // slot i: [24i, 24i+16) digest, [24i+16, 24i+24) offset+1 (0: empty)
	n       int    // slots
	entries int
	// latest is the last offset the map covers (Kafka's latestOffset).
	latest int64
}

const offsetMapSlot = md5.Size + 8

// newOffsetMap sizes a map to bufferBytes (at least one slot).
func newOffsetMap(bufferBytes int64) *offsetMap {
	n := max(int(bufferBytes/offsetMapSlot), 2)
	return &offsetMap{slots: make([]byte, n*offsetMapSlot), n: n, latest: -1}
}

func (m *offsetMap) clear() {
	clear(m.slots)
	m.entries, m.latest = 0, -1
}

// capacity is how many keys the cleaner puts in before it stops.
func (m *offsetMap) capacity(loadFactor float64) int { return max(int(float64(m.n)*loadFactor), 1) }

func (m *offsetMap) find(digest *[md5.Size]byte) int {
	i := int(binary.BigEndian.Uint64(digest[:8]) % uint64(m.n))
	for {
		s := m.slots[i*offsetMapSlot:]
		if binary.BigEndian.Uint64(s[md5.Size:]) == 0 || [md5.Size]byte(s[:md5.Size]) == *digest {
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
	d := md5.Sum(key)
	s := m.slots[m.find(&d)*offsetMapSlot:]
	if binary.BigEndian.Uint64(s[md5.Size:]) == 0 {
		m.entries++
		copy(s, d[:])
	}
	binary.BigEndian.PutUint64(s[md5.Size:], uint64(offset+1))
}

// get is the latest offset of key, -1 if the map does not hold it.
func (m *offsetMap) get(key []byte) int64 {
	d := md5.Sum(key)
	s := m.slots[m.find(&d)*offsetMapSlot:]
	return int64(binary.BigEndian.Uint64(s[md5.Size:])) - 1
}

// utilization is the share of slots in use (Kafka's bufferUtilization).
func (m *offsetMap) utilization() float64 { return float64(m.entries) / float64(m.n) }
