package share

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// memLog is __share_group_state kept in memory: each partition a list of
// records from its log start.
type memLog struct {
	parts  [][]memRec
	starts []int64
	// dropUpdates replays no ShareUpdate (the negative control).
	dropUpdates bool
}

type memRec struct {
	off        int64
	key, value []byte
}

func newMemLog(n int) *memLog { return &memLog{parts: make([][]memRec, n), starts: make([]int64, n)} }

func (l *memLog) Partitions() int32 { return int32(len(l.parts)) }

func (l *memLog) end(p int32) int64 {
	if n := len(l.parts[p]); n > 0 {
		return l.parts[p][n-1].off + 1
	}
	return l.starts[p]
}

func (l *memLog) Append(p int32, n int, rec func(int) ([]byte, []byte)) (int64, error) {
	for i := range n {
		k, v := rec(i)
		l.parts[p] = append(l.parts[p], memRec{l.end(p), k, v})
	}
	return l.end(p), nil
}

func (l *memLog) Sync(int32, int64) error { return nil }

func (l *memLog) ReplayAt(p int32, fn func(int64, []byte, []byte)) error {
	for _, r := range l.parts[p] {
		if l.dropUpdates && len(r.key) >= 2 && r.key[1] == byte(RecordUpdate) {
			continue
		}
		fn(r.off, r.key, r.value)
	}
	return nil
}

func (l *memLog) DeleteBefore(p int32, off int64) error {
	i := 0
	for i < len(l.parts[p]) && l.parts[p][i].off < off {
		i++
	}
	l.parts[p] = l.parts[p][i:]
	l.starts[p] = off
	return nil
}

func (l *memLog) records() int {
	n := 0
	for _, p := range l.parts {
		n += len(p)
	}
	return n
}

// The record layout is Kafka's: a ShareSnapshotKey is the int16 type 0,
// the group as an int16-length string, the topic id's 16 bytes and the
// int32 partition; its value the int16 version 0 then the flexible
// fields with compact arrays and empty tagged fields.
func TestStateRecordLayout(t *testing.T) {
	var id [16]byte
	id[15] = 7
	r := StateRecord{Type: RecordSnapshot, Group: "g", TP: TP{id, 2}, SnapshotEpoch: 1, StateEpoch: 0, LeaderEpoch: 0,
		Start: 5, Batches: []StateBatch{{5, 6, Acknowledged, 1}}}
	wantKey := "0000" + "0001" + "67" + "00000000000000000000000000000007" + "00000002"
	if got := hex.EncodeToString(r.Key()); got != wantKey {
		t.Fatalf("key %s, want %s", got, wantKey)
	}
	wantValue := "0000" + "0001" + "00000000" + "00000000" + "0000000000000005" + "02" +
		"0000000000000005" + "0000000000000006" + "02" + "0001" + "00" + "00"
	if got := hex.EncodeToString(r.Value()); got != wantValue {
		t.Fatalf("value %s, want %s", got, wantValue)
	}
	back, err := DecodeStateRecord(r.Key(), r.Value())
	if err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("decoded %+v %v", back, err)
	}
	u := StateRecord{Type: RecordUpdate, Group: "g", TP: TP{id, 2}, Start: -1}
	back, err = DecodeStateRecord(u.Key(), u.Value())
	if err != nil || back.Type != RecordUpdate || back.Start != -1 || len(back.Batches) != 0 {
		t.Fatalf("update decoded %+v %v", back, err)
	}
	if k, p := DescribeStateRecord(3, r.Key(), r.Value()); k != `{"type":"0","data":{"groupId":"g","topicId":"AAAAAAAAAAAAAAAAAAAABw","partition":2}}` ||
		p != `{"type":"0","data":{"snapshotEpoch":1,"stateEpoch":0,"leaderEpoch":0,"startOffset":5,"stateBatches":[{"firstOffset":5,"lastOffset":6,"deliveryState":2,"deliveryCount":1}]}}` {
		t.Fatalf("described %s %s", k, p)
	}
	if k, p := DescribeStateRecord(3, append([]byte{0, 9}, r.Key()[2:]...), nil); k != "Unknown record type 9 at offset 3, skipping." || p != "" {
		t.Fatalf("unknown type described %q %q", k, p)
	}
	if _, err := DecodeStateRecord(r.Key(), r.Value()[:10]); err == nil {
		t.Fatal("a cut value decoded")
	}
}

// randomRun drives share partitions through random acquisitions,
// acknowledgements, releases, lock expiries, log start moves and resets,
// saving each after every change, and returns the last state saved of
// each.
func randomRun(seed int64, st *TopicStore, parts int) map[TP]Snapshot {
	rng := rand.New(rand.NewSource(seed))
	ps := map[TP]*Partition{}
	last := map[TP]Snapshot{}
	now := t0
	c := Config{LockDuration: time.Second, DeliveryLimit: 4, MaxInFlight: 40}
	for i := range 600 {
		tp := TP{topicA, int32(rng.Intn(parts))}
		p := ps[tp]
		if p == nil {
			p = NewPartition(c, int64(rng.Intn(5)))
			ps[tp] = p
		}
		now = now.Add(time.Duration(rng.Intn(400)) * time.Millisecond)
		m := fmt.Sprint("m", rng.Intn(3))
		switch op := rng.Intn(10); {
		case op < 4:
			p.Acquire(now, m, 1+rng.Intn(8), p.FetchOffset(), p.End()+int64(rng.Intn(10)), log(p.FetchOffset(), p.End()+20))
		case op < 7:
			for off := p.Start(); off < p.End(); off++ {
				if s, _ := p.StateOf(off); s == Acquired && rng.Intn(2) == 0 {
					typ := []int8{AckAccept, AckRelease, AckReject}[rng.Intn(3)]
					for _, who := range []string{"m0", "m1", "m2"} {
						if _, err := p.Ack(now, who, []AckBatch{{off, off, []int8{typ}}}); err == nil {
							break
						}
					}
				}
			}
		case op < 8:
			p.ExpireLocks(now.Add(time.Second))
		case op < 9:
			p.MoveStart(p.Start() + int64(rng.Intn(3)))
		default:
			if i%7 == 0 {
				p.Reset(int64(rng.Intn(30)))
			}
		}
		snap := p.Snapshot()
		if err := st.Save("g", tp, snap); err != nil {
			panic(err)
		}
		last[tp] = snap
	}
	return last
}

// The store replays to the state saved last, whatever mix of snapshots
// and updates (every 3rd write a snapshot), and pruning, wrote it; a
// share partition deleted stays deleted.
func TestTopicStoreReplay(t *testing.T) {
	for seed := range int64(20) {
		l := newMemLog(3)
		st := &TopicStore{Log: l, PerSnapshot: 3}
		want := randomRun(seed, st, 4)
		snaps, updates := st.Written()
		if snaps == 0 || updates == 0 {
			t.Fatalf("seed %d: %d snapshots %d updates", seed, snaps, updates)
		}
		if err := st.Delete("g", TP{topicA, 1}); err != nil {
			t.Fatal(err)
		}
		delete(want, TP{topicA, 1})
		got, err := (&TopicStore{Log: l, PerSnapshot: 3}).Load()
		if err != nil {
			t.Fatal(err)
		}
		for tp, w := range want {
			nw, _ := normalize(w)
			if g := got["g"][tp]; !snapshotsEqual(g, nw) {
				t.Fatalf("seed %d %v: replayed %+v, saved %+v", seed, tp, g, nw)
			}
		}
		if len(got["g"]) != len(want) {
			t.Fatalf("seed %d: replayed %d share partitions, want %d", seed, len(got["g"]), len(want))
		}
		if seed == 0 {
			t.Logf("%d snapshots, %d updates written; %d records left after pruning", snaps, updates, l.records())
		}
		if l.records() >= snaps+updates {
			t.Fatalf("seed %d: nothing pruned (%d records)", seed, l.records())
		}
	}
}

// Negative control: a replay that skips the ShareUpdates does not reach
// the saved state (the updates carry state the snapshots alone lack).
func TestTopicStoreReplayWithoutUpdates(t *testing.T) {
	l := newMemLog(1)
	want := randomRun(1, &TopicStore{Log: l, PerSnapshot: 50}, 2)
	l.dropUpdates = true
	got, err := (&TopicStore{Log: l, PerSnapshot: 50}).Load()
	if err != nil {
		t.Fatal(err)
	}
	same := true
	for tp, w := range want {
		nw, _ := normalize(w)
		same = same && snapshotsEqual(got["g"][tp], nw)
	}
	if same {
		t.Fatal("dropping every update still replays the saved state: the replay test proves nothing")
	}
}

// An unchanged state writes nothing; an update holds only the offsets
// that changed.
func TestTopicStoreUpdateIsDelta(t *testing.T) {
	l := newMemLog(1)
	st := &TopicStore{Log: l, PerSnapshot: 500}
	p := NewPartition(cfg(), 0)
	tp := TP{topicA, 0}
	save := func() {
		if err := st.Save("g", tp, p.Snapshot()); err != nil {
			t.Fatal(err)
		}
	}
	save()
	p.Acquire(t0, "m", 5, 0, 10, log(0, 10))
	save()
	save()
	if _, err := p.Ack(t0, "m", []AckBatch{{2, 2, []int8{AckAccept}}}); err != nil {
		t.Fatal(err)
	}
	save()
	if n := len(l.parts[0]); n != 3 {
		t.Fatalf("%d records, want 3 (snapshot, update, update)", n)
	}
	r, err := DecodeStateRecord(l.parts[0][2].key, l.parts[0][2].value)
	if err != nil || r.Type != RecordUpdate || !reflect.DeepEqual(r.Batches, []StateBatch{{2, 2, Acknowledged, 1}}) {
		t.Fatalf("third record %+v %v", r, err)
	}
	if !bytes.Equal(l.parts[0][2].key[2:], l.parts[0][0].key[2:]) {
		t.Fatal("update and snapshot keys name different share partitions")
	}
}
