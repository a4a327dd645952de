package psm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/minibroker/minibroker/internal/vfs"
)

func snapshotSeeds(f *testing.F) {
	m := NewManager(Config{}, nil, nil)
	for i := int32(0); i < 7; i++ {
		apply(f, m, OriginClient, dataBatch(5, 2, i*3, 3, int64(i)*3, false))
	}
	apply(f, m, OriginClient, dataBatch(9, 0, 0, 2, 21, true))
	apply(f, m, OriginCoordinator, marker(false, 12, 4, 7, 23))
	full := encodeSnapshotOf(m, 24)
	for _, fix := range []bool{false, true} {
		f.Add(full, fix)
		f.Add(encodeSnapshot(0, nil), fix)
		f.Add(full[:len(full)-1], fix)
		f.Add(full[:snapshotHeaderLen], fix)
		f.Add([]byte{}, fix)
		f.Add([]byte("MBPS"), fix)
	}
}

// FuzzDecodeSnapshot: never panics, and what decodes re-encodes to the
// same bytes (the format has one encoding per state). With fixCRC the
// input's CRC is made valid first, so the fuzzer reaches the entry decoder.
func FuzzDecodeSnapshot(f *testing.F) {
	snapshotSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte, fixCRC bool) {
		if fixCRC && len(b) >= snapshotHeaderLen {
			binary.BigEndian.PutUint32(b[6:], crc32.Checksum(b[snapshotCRCStart:], crc32c))
		}
		off, entries, err := decodeSnapshot(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("error not marked corrupt: %v", err)
			}
			return
		}
		states := make([]*entryState, len(entries))
		for i, e := range entries {
			s := importEntry(e)
			states[i] = &s
		}
		if again := encodeSnapshot(off, states); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", again, b)
		}
	})
}

// FuzzLoadLatestSnapshot: whatever the newest file holds, loading never
// fails and falls back to the valid older snapshot unless the newest is
// valid.
func FuzzLoadLatestSnapshot(f *testing.F) {
	snapshotSeeds(f)
	older := populated(f)
	f.Fuzz(func(t *testing.T, b []byte, fixCRC bool) {
		if fixCRC && len(b) >= snapshotHeaderLen {
			binary.BigEndian.PutUint32(b[6:], crc32.Checksum(b[snapshotCRCStart:], crc32c))
		}
		dir := t.TempDir()
		if err := older.WriteSnapshot(vfs.Default, dir, 5); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, SnapshotFileName(24)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		m, off, err := LoadLatestSnapshot(vfs.Default, dir, 1000, Config{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		gotOff, entries, decErr := decodeSnapshot(b)
		valid := decErr == nil && gotOff == 24
		switch {
		case valid && (off != 24 || !reflect.DeepEqual(m.Entries(), normalize(entries))):
			t.Fatalf("valid snapshot not loaded: %d", off)
		case !valid && (off != 5 || m.Len() != older.Len()):
			t.Fatalf("corrupt snapshot: loaded %d with %d producers", off, m.Len())
		}
	})
}

// normalize makes decoded entries comparable with Manager.Entries.
func normalize(es []Entry) []Entry {
	out := make([]Entry, 0, len(es))
	for _, e := range es {
		s := importEntry(e)
		out = append(out, s.export())
	}
	return out
}

// FuzzPrepare drives a manager with arbitrary appends of every origin and
// checks its invariants: no panic, REPLICATION never refused, a refused
// append changes nothing, the ongoing-transaction index matches the
// entries, and the state survives a snapshot round trip.
func FuzzPrepare(f *testing.F) {
	f.Add([]byte{0, 5, 0, 0, 3, 1, 5, 0, 1, 2, 2, 5, 0, 0, 0, 7})
	f.Add([]byte{1, 5, 1, 9, 2, 1, 5, 0, 0, 1, 2, 5, 1, 0, 3, 6, 0, 0, 0, 0})
	f.Add(bytes.Repeat([]byte{0, 3, 0, 0, 1, 0, 3, 0, 1, 1, 2, 3, 0, 0, 0, 4}, 8))
	f.Fuzz(func(t *testing.T, prog []byte) {
		m := NewManager(Config{ProducerIDExpirationMs: 50}, nil, nil)
		next := int64(0)
		for len(prog) >= 5 && next < 10_000 {
			op, pid, epoch, seq, count := prog[0], int64(prog[1]%4), int16(prog[2]%3), int32(prog[3]), int32(prog[4]%4)+1
			prog = prog[5:]
			origin := Origin(op % 3)
			var bs []PreparedBatch
			switch (op / 3) % 7 {
			case 0, 1:
				bs = append(bs, dataBatch(pid, epoch, seq, count, next, false))
			case 2:
				bs = append(bs, dataBatch(pid, epoch, seq, count, next, true))
			case 3:
				bs = append(bs, marker(seq%2 == 0, pid, epoch, int32(seq%3), next))
			case 4:
				bs = append(bs, barrier(next))
			case 5:
				bs = append(bs, dataBatch(pid, epoch, seq, count, next, true),
					marker(true, pid, epoch, 0, next+int64(count)),
					dataBatch(pid, epoch, seq+count, 1, next+int64(count)+1, false))
			case 6:
				m.RemoveExpired(testTS + int64(seq))
				continue
			}
			before := stateOf(m)
			p, err := m.Prepare(origin, bs, testTS)
			if err != nil {
				if origin == OriginReplication {
					t.Fatalf("replication refused: %v", err)
				}
				if !reflect.DeepEqual(stateOf(m), before) {
					t.Fatal("a refused append changed the state")
				}
				continue
			}
			p.Apply()
			next = bs[len(bs)-1].Header.LastOffset() + 1
			for pid, e := range m.producers {
				off, ok := m.ongoing[pid]
				if (e.txnFirstOffset >= 0) != ok || (ok && off != e.txnFirstOffset) {
					t.Fatalf("ongoing index out of step for %d: %v %d vs %d", pid, ok, off, e.txnFirstOffset)
				}
			}
			if len(m.ongoing) > len(m.producers) {
				t.Fatal("ongoing transaction without a producer")
			}
		}
		_, entries, err := decodeSnapshot(encodeSnapshotOf(m, next))
		if err != nil || !reflect.DeepEqual(normalize(entries), m.Entries()) {
			t.Fatalf("snapshot round trip: %v", err)
		}
	})
}
