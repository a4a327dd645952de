package partition

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/batch"
	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/logtool"
	"github.com/minibroker/minibroker/internal/psm"
	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// The compaction property (docs/COMPACTION.md): over random logs of keyed
// records, tombstones, idempotent and transactional producers, commits
// and aborts, producer ids reused by another cluster after a
// MIRROR_PID_RESET barrier, gaps and segment rolls, the cleaned log and
// the uncleaned one give
//   - the same latest value of every key to a read_committed consumer,
//   - every kept record at its original offset with its key and value,
//   - the same producer state rebuilt through the partition's own
//     recovery with every snapshot deleted.

type genProducer struct {
	epoch int16
	seq   int32
	txn   bool // transactional
	open  bool // a transaction is open
}

type logGen struct {
	rng       *rand.Rand
	p         *Partition
	clock     *atomic.Int64
	next      int64 // next offset
	producers map[int64]*genProducer
	cluster   int
	coordEp   int32
	idemPids  []int64 // the idempotent producer ids this cluster uses
	// swallowBarriers fails over without a barrier: producer-id
	// collisions, for verify-log to find.
	swallowBarriers bool
}

func keyedBatch(pid int64, epoch int16, seq int32, txn bool, ts int64, recs []kmsg.Record) []byte {
	var body []byte
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
		recs[i].Length = 0
		recs[i].Length = int32(len(recs[i].AppendTo(nil)) - 1)
		body = recs[i].AppendTo(body)
	}
	attrs := int16(0)
	if txn {
		attrs |= batch.AttrTransactional
	}
	rb := kmsg.RecordBatch{Magic: 2, Attributes: attrs, LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: ts,
		MaxTimestamp: ts, ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(len(recs)), Records: body}
	rb.Length = int32(batch.HeaderSize - batch.LogOverhead + len(body))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	return raw
}

func (g *logGen) appendRaw(t *testing.T, raw []byte) {
	t.Helper()
	if g.rng.IntN(12) == 0 {
		g.next += int64(1 + g.rng.IntN(3)) // a gap, as a compacted source leaves
	}
	raw = at(raw, g.next, int32(g.cluster))
	h, _ := batch.ParseHeader(raw)
	if _, err := g.p.AppendAsMirror(raw); err != nil {
		t.Fatalf("append at %d: %v", g.next, err)
	}
	g.next = h.LastOffset() + 1
	g.clock.Add(1)
}

func (g *logGen) records() []kmsg.Record {
	n := 1 + g.rng.IntN(3)
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i].Key = []byte(fmt.Sprintf("k%d", g.rng.IntN(10)))
		if g.rng.IntN(5) != 0 {
			recs[i].Value = []byte(fmt.Sprintf("v%d-%d", g.next, i))
		}
	}
	return recs
}

// step appends one random batch.
func (g *logGen) step(t *testing.T) {
	ts := g.clock.Load()
	switch r := g.rng.IntN(100); {
	case r < 30: // plain
		g.appendRaw(t, keyedBatch(-1, -1, -1, false, ts, g.records()))
	case r < 55: // idempotent
		if len(g.idemPids) == 0 {
			g.idemPids = []int64{1, 2, 3}[:1+g.rng.IntN(3)]
			g.rng.Shuffle(len(g.idemPids), func(i, j int) { g.idemPids[i], g.idemPids[j] = g.idemPids[j], g.idemPids[i] })
		}
		pid := g.idemPids[g.rng.IntN(len(g.idemPids))]
		pr := g.producer(pid, false)
		if pr == nil {
			return
		}
		recs := g.records()
		g.appendRaw(t, keyedBatch(pid, pr.epoch, pr.seq, false, ts, recs))
		pr.seq += int32(len(recs))
	case r < 75: // transactional data
		pid := int64(10 + g.rng.IntN(2))
		pr := g.producer(pid, true)
		if pr == nil {
			return
		}
		recs := g.records()
		g.appendRaw(t, keyedBatch(pid, pr.epoch, pr.seq, true, ts, recs))
		pr.seq += int32(len(recs))
		pr.open = true
	case r < 88: // end a transaction
		for _, pid := range slices.Sorted(maps.Keys(g.producers)) {
			if pr := g.producers[pid]; pr.open {
				g.appendRaw(t, batch.EndTxnBatch(g.rng.IntN(2) == 0, pid, pr.epoch, g.coordEp, ts))
				pr.open = false
				if g.rng.IntN(3) == 0 {
					pr.epoch++ // a new session of the transactional id
					pr.seq = 0
				}
				break
			}
		}
	case r < 93: // an idempotent producer restarts
		for _, pid := range slices.Sorted(maps.Keys(g.producers)) {
			if pr := g.producers[pid]; !pr.txn {
				pr.epoch++
				pr.seq = 0
				break
			}
		}
	default: // failover: the barrier, then another cluster's producers reuse the ids
		for _, pr := range g.producers {
			if pr.open {
				return // STOPPING truncates to the LSO: no open transaction crosses a barrier
			}
		}
		if !g.swallowBarriers {
			g.appendRaw(t, batch.BarrierBatch(fmt.Sprintf("cluster-%d", g.cluster), ts))
		}
		g.cluster++
		g.coordEp = int32(g.rng.IntN(3))
		g.producers = map[int64]*genProducer{}
		g.idemPids = []int64{1 + int64(g.rng.IntN(3))}
	}
}

func (g *logGen) producer(pid int64, txn bool) *genProducer {
	pr, ok := g.producers[pid]
	if !ok {
		pr = &genProducer{epoch: int16(g.rng.IntN(4)), txn: txn}
		g.producers[pid] = pr
	}
	if pr.txn != txn {
		return nil
	}
	return pr
}

// consumerView is what a read_committed consumer reading from the start
// sees: the latest value of each key (tombstones delete it) below lso,
// and every record at its offset.
type logRecord struct {
	key, value string
	tombstone  bool
}

func readView(t *testing.T, p *Partition) (map[string]string, map[int64]logRecord) {
	t.Helper()
	lso := p.Offsets().LastStable
	latest := map[string]string{}
	all := map[int64]logRecord{}
	aborted := p.log.AbortedTxns(0, lso)
	for off := p.log.LogStartOffset(); off < lso; {
		raw, err := p.log.ReadUpTo(off, lso, 1<<20, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) == 0 {
			break
		}
		it := batch.NewIter(raw)
		for b, h, ok := it.Next(); ok; b, h, ok = it.Next() {
			off = h.LastOffset() + 1
			if h.IsControl() {
				continue
			}
			isAborted := false
			for _, a := range aborted {
				if h.IsTransactional() && a.ProducerID == h.ProducerID && h.BaseOffset >= a.FirstOffset && h.BaseOffset <= a.LastOffset {
					isAborted = true
				}
			}
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b); err != nil {
				t.Fatal(err)
			}
			recs := rb.Records
			for i := int32(0); i < rb.NumRecords; i++ {
				var r kmsg.Record
				n, _ := binary.Varint(recs)
				if err := r.ReadFrom(recs); err != nil {
					t.Fatal(err)
				}
				_, m := binary.Varint(recs)
				recs = recs[m+int(n):]
				o := h.BaseOffset + int64(r.OffsetDelta)
				if o >= lso {
					continue
				}
				lr := logRecord{key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil}
				if !isAborted {
					all[o] = lr
					if lr.tombstone {
						delete(latest, lr.key)
					} else {
						latest[lr.key] = lr.value
					}
				}
			}
		}
	}
	return latest, all
}

// verifyLog runs verify-log's replay (logtool.Verifier) over the log and
// returns its findings of impossible histories, as "kind pid".
func verifyLog(t *testing.T, p *Partition) map[string]bool {
	t.Helper()
	v := logtool.NewVerifier(logtool.VerifyOptions{})
	end := p.log.LogEndOffset()
	for off := p.log.LogStartOffset(); off < end; {
		raw, err := p.log.ReadUpTo(off, end, 1<<20, true)
		if err != nil || len(raw) == 0 {
			t.Fatalf("read %d: %v", off, err)
		}
		it := batch.NewIter(raw)
		for b, h, ok := it.Next(); ok; b, h, ok = it.Next() {
			off = h.LastOffset() + 1
			v.Batch("log", &logtool.Batch{Raw: b, Header: h, CRCValid: true})
		}
	}
	out := map[string]bool{}
	for _, f := range v.Findings {
		if f.Kind.Severity == logtool.SeverityImpossible {
			out[fmt.Sprintf("%s %d", f.Kind.Name, f.ProducerID)] = true
		}
	}
	return out
}

// logCounts counts what a log holds: records, tombstones, COMMIT/ABORT
// markers, barriers, and aborted records below the cleaned end.
type logCounts struct{ records, tombstones, markers, barriers, abortedRecords int }

func countLog(t *testing.T, p *Partition) logCounts {
	cleanedEnd, err := p.CleanerCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	t.Helper()
	var c logCounts
	end := p.log.LogEndOffset()
	aborted := p.log.AbortedTxns(0, end)
	for off := p.log.LogStartOffset(); off < end; {
		raw, err := p.log.ReadUpTo(off, end, 1<<20, true)
		if err != nil || len(raw) == 0 {
			t.Fatalf("read %d: %v", off, err)
		}
		it := batch.NewIter(raw)
		for b, h, ok := it.Next(); ok; b, h, ok = it.Next() {
			off = h.LastOffset() + 1
			switch {
			case batch.IsBarrier(&h, b):
				c.barriers++
			case h.IsControl():
				c.markers += int(h.NumRecords)
			default:
				c.records += int(h.NumRecords)
				var rb kmsg.RecordBatch
				rb.ReadFrom(b)
				for _, a := range aborted {
					if h.IsTransactional() && a.ProducerID == h.ProducerID && h.BaseOffset >= a.FirstOffset && h.BaseOffset <= a.LastOffset &&
						(cleanedEnd == 0 || h.LastOffset() < cleanedEnd) {
						c.abortedRecords += int(h.NumRecords)
					}
				}
				recs := rb.Records
				for range rb.NumRecords {
					var r kmsg.Record
					n, m := binary.Varint(recs)
					r.ReadFrom(recs)
					recs = recs[m+int(n):]
					if r.Value == nil {
						c.tombstones++
					}
				}
			}
		}
	}
	return c
}

// producerState rebuilds producer state from the log alone: close,
// delete every snapshot, reopen through the partition's recovery.
func producerState(t *testing.T, fsys vfs.FS, dir string, cfg Config, now func() time.Time) []string {
	t.Helper()
	ents, _ := fsys.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".snapshot") {
			fsys.Remove(filepath.Join(dir, e.Name()))
		}
	}
	p, err := Open(dir, "t", 0, cfg, Options{Now: now, FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	return describeProducers(p.Producers())
}

// describeProducers renders what producer state decides with: epoch,
// last batch (sequences, offsets, timestamp), open transaction and last
// timestamp. Two things are not compared, because cleaning loses them as
// Kafka's cleaner does: the window of earlier batches (a producer's last
// batch is kept, not the four before it) and the coordinator epoch that
// only a removed marker carried (it checks markers of later
// transactions; the next marker sets it again).
func describeProducers(es []psm.Entry) []string {
	var out []string
	for _, e := range es {
		last := psm.BatchMeta{}
		if n := len(e.Batches); n > 0 {
			last = e.Batches[n-1]
		}
		out = append(out, fmt.Sprintf("pid=%d epoch=%d last=%+v txn=%d ts=%d",
			e.ProducerID, e.Epoch, last, e.CurrentTxnFirstOffset, e.LastTimestamp))
	}
	slices.Sort(out)
	return out
}

func compactedConfig() Config {
	lc := mlog.DefaultConfig()
	lc.SegmentBytes = 700
	lc.IndexIntervalBytes = 200
	lc.Compact, lc.NoDelete = true, true
	lc.MinCleanableDirtyRatio = 0
	lc.DeleteRetentionMs = 40
	return Config{Log: lc, MessageMaxBytes: 1 << 20}
}

// checkCompactionProperty runs one seed and returns what differs.
func checkCompactionProperty(t *testing.T, seed uint64, k knobs, before, after *logCounts) []string {
	diffs, _, _ := checkCompaction(t, seed, k, false, before, after)
	return diffs
}

// checkCompaction runs one seed (swallow: failovers without a barrier)
// and returns what differs, and verify-log's impossible findings on the
// log before and after cleaning.
func checkCompaction(t *testing.T, seed uint64, k knobs, swallow bool, before, after *logCounts) (diffs []string, found0, found1 map[string]bool) {
	const dir = "/p/t-0"
	mem := errorfs.NewMem()
	cfg := compactedConfig()
	clock := &atomic.Int64{}
	clock.Store(1_000_000)
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	p, err := Open(dir, "t", 0, cfg, Options{Now: now, FS: mem, private: k})
	if err != nil {
		t.Fatal(err)
	}
	g := &logGen{rng: rand.New(rand.NewPCG(seed, 7)), p: p, clock: clock, producers: map[int64]*genProducer{},
		swallowBarriers: swallow}
	n := 60 + g.rng.IntN(120)
	for range n {
		g.step(t)
	}
	latest0, all0 := readView(t, p)
	found0 = verifyLog(t, p)
	addCounts(before, countLog(t, p))
	live := describeProducers(p.Producers())
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	refFS := mem.CrashClone() // Close fsynced the log
	if p, err = Open(dir, "t", 0, cfg, Options{Now: now, FS: mem, private: k}); err != nil {
		t.Fatal(err)
	}
	c := mlog.NewCleaner(1<<20, 0, nil)
	// Passes with the clock moving past delete.retention.ms, so horizons
	// are set, then pass, and tombstones, markers and barriers go.
	for pass := range 4 {
		if _, err := p.Clean(c, true); err != nil {
			t.Fatalf("seed %d pass %d: %v", seed, pass, err)
		}
		clock.Add(30)
	}
	latest1, all1 := readView(t, p)
	found1 = verifyLog(t, p)
	addCounts(after, countLog(t, p))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for off, r := range all1 {
		if r0, ok := all0[off]; !ok || r0 != r {
			diffs = append(diffs, fmt.Sprintf("offset %d: %+v, was %+v (present %v)", off, r, r0, ok))
		}
	}
	if !maps.Equal(latest0, latest1) {
		diffs = append(diffs, fmt.Sprintf("latest values differ:\n  cleaned   %v\n  uncleaned %v", latest1, latest0))
	}
	ref := producerState(t, refFS, dir, cfg, now)
	if !slices.Equal(ref, live) {
		if !swallow { // without barriers the live state is the collided one
			t.Fatalf("seed %d: uncleaned rebuild differs from the live state:\n%v\n%v", seed, ref, live)
		}
	}
	got := producerState(t, mem, dir, cfg, now)
	if !slices.Equal(got, ref) {
		diffs = append(diffs, fmt.Sprintf("producer state rebuilt from the cleaned log:\n  %s\nfrom the uncleaned log:\n  %s",
			strings.Join(got, "\n  "), strings.Join(ref, "\n  ")))
	}
	return diffs, found0, found1
}

func addCounts(dst *logCounts, c logCounts) {
	dst.records += c.records
	dst.tombstones += c.tombstones
	dst.markers += c.markers
	dst.barriers += c.barriers
	dst.abortedRecords += c.abortedRecords
}

func TestCompactionProperty(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 30
	}
	var before, after logCounts
	for seed := range uint64(seeds) {
		if diffs := checkCompactionProperty(t, seed, knobs{}, &before, &after); len(diffs) > 0 {
			t.Fatalf("seed %d:\n%s", seed, strings.Join(diffs, "\n"))
		}
	}
	t.Logf("%d seeds: before cleaning %+v; after %+v", seeds, before, after)
	// The property is not vacuous: every kind of removal happened.
	if after.records >= before.records || after.tombstones >= before.tombstones || after.markers >= before.markers ||
		after.barriers >= before.barriers || after.abortedRecords != 0 {
		t.Fatalf("cleaning removed too little: before %+v, after %+v", before, after)
	}
}

// TestCompactionPropertyWithoutBarrierRule is the negative control: a
// cleaner that removes barriers as it removes markers brings producer
// entries the barrier reset back when the cleaned log is replayed.
func TestCompactionPropertyWithoutBarrierRule(t *testing.T) {
	failed := 0
	for seed := range uint64(60) {
		if diffs := checkCompactionProperty(t, seed, knobs{cleanDropsBarriers: true}, &logCounts{}, &logCounts{}); len(diffs) > 0 {
			failed++
			if failed == 1 {
				t.Logf("seed %d without the barrier rule:\n%s", seed, strings.Join(diffs, "\n"))
			}
		}
	}
	t.Logf("%d of 60 seeds fail without the barrier rule", failed)
	if failed == 0 {
		t.Fatal("no seed failed without the barrier rule: the property does not test it")
	}
}

// TestCompactionVerifyLog: verify-log judges a cleaned log as it judges
// the uncleaned one. With a barrier at every failover it finds no
// impossible producer history in either (no false finding from
// cleaning); without the barrier rule (barriers removed as markers) the
// cleaned log shows histories the barrier had separated; with failovers
// that swallowed their barrier (producer-id collisions), every collision
// it finds in the cleaned log it found in the original, and it finds
// them in both.
func TestCompactionVerifyLog(t *testing.T) {
	const seeds = 40
	falseWithoutRule, sameCollisions, samePids, collided := 0, 0, 0, 0
	pids := func(f map[string]bool) map[string]bool {
		out := map[string]bool{}
		for k := range f {
			out[k[strings.LastIndex(k, " ")+1:]] = true
		}
		return out
	}
	for seed := range uint64(seeds) {
		_, f0, f1 := checkCompaction(t, seed, knobs{}, false, &logCounts{}, &logCounts{})
		if len(f0) > 0 || len(f1) > 0 {
			t.Fatalf("seed %d: findings with every barrier in place: before %v, after cleaning %v", seed, f0, f1)
		}
		_, _, f1 = checkCompaction(t, seed, knobs{cleanDropsBarriers: true}, false, &logCounts{}, &logCounts{})
		if len(f1) > 0 {
			falseWithoutRule++
		}
		_, f0, f1 = checkCompaction(t, seed, knobs{}, true, &logCounts{}, &logCounts{})
		for f := range f1 {
			if !f0[f] {
				t.Fatalf("seed %d: cleaned log shows %q, the original did not (original: %v)", seed, f, f0)
			}
		}
		if len(f0) > 0 {
			collided++
			if maps.Equal(f0, f1) {
				sameCollisions++
			}
			if maps.Equal(pids(f0), pids(f1)) {
				samePids++
			}
		}
	}
	t.Logf("%d seeds: without the barrier rule %d cleaned logs show impossible histories; of %d logs with swallowed barriers, %d show the same findings after cleaning and %d the same colliding producer ids (the rest a subset: cleaning removed the evidence)",
		seeds, falseWithoutRule, collided, sameCollisions, samePids)
	if falseWithoutRule == 0 || collided == 0 || sameCollisions == 0 {
		t.Fatal("the scenarios did not happen")
	}
}
