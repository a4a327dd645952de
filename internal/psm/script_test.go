package psm

// The scripted state-machine tests: testdata/*.txt in the datadriven
// format (github.com/cockroachdb/datadriven, as pebble and CockroachDB use
// it): a directive, "----", and what the manager answered. Events print
// their outcome; queries print the state. `go test ./internal/psm -run
// TestScripts -rewrite` regenerates the answers (read the diff).
//
// Events:
//
//	new [window=N] [expiration=MS]          fresh manager (one is made at start)
//	append ORIGIN [ITEM]                    one append; more ITEMs, one a line, as input
//	marker commit|abort pid= epoch= coord= offset= [origin=]   (default coordinator)
//	barrier offset= [origin=]               MIRROR_PID_RESET (default coordinator)
//	expire now=MS                           RemoveExpired; prints expired=N
//	snapshot-reload                         write a snapshot, load it back
//
//	ITEM: data pid= epoch= seq=A[-B]|none offset=X[-Y] [txn] [ts=]
//	      nopid offset=X[-Y]
//	      commit|abort pid= epoch= coord= offset=
//	      barrier offset=
//	      control type=N offset=            (a control type the PSM ignores)
//	      txnbarrier offset=                (type 7 in a transactional batch)
//	      badcontrol pid= offset=           (a marker that cannot be decoded)
//
// An append prints "ok" and one "completed pid= offset=X-Y commit|abort
// lso=N" line per transaction it completed, or "error NAME", or
// "duplicate offset=X-Y".
//
// Queries:
//
//	entry pid=N        the producer's entry (epoch, coordinator epoch, open
//	                   transaction, timestamp, batch sequences and offsets), or none
//	producers          how many entries, and their ids
//	lso                the first unstable offset, or none
//	ongoing            open transactions as PID@FIRST_OFFSET, or none
//	anomalies          the replication anomaly counters above zero, or none
//	end                LastOffset

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/vfs"
)

func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasSuffix(path, ".txt") {
			t.Skip("not a script")
		}
		r := &scriptRun{t: t}
		r.reset(Config{})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			r.t, r.where = t, d.Pos+": "+d.FullCmd()
			return r.run(d)
		})
	})
}

type scriptRun struct {
	t     *testing.T
	reg   *prometheus.Registry
	m     *Manager
	where string
}

func (r *scriptRun) run(d *datadriven.TestData) string {
	fields := strings.Fields(d.FullCmd())
	switch d.Cmd {
	case "new":
		kv := parseKV(r, fields[1:])
		r.reset(Config{MaxBatchesPerProducer: int(kv.int("window", 0)), ProducerIDExpirationMs: kv.int("expiration", 0)})
		return "ok\n"
	case "append":
		if len(fields) < 2 {
			r.fail("append ORIGIN [ITEM]")
		}
		var bs []PreparedBatch
		if len(fields) > 2 {
			bs = append(bs, r.item(fields[2:]))
		}
		for _, line := range strings.Split(d.Input, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				bs = append(bs, r.item(strings.Fields(line)))
			}
		}
		return r.append(r.origin(fields[1]), bs)
	case "marker", "barrier":
		kv := parseKV(r, fields[1:])
		return r.append(r.origin(kv.str("origin", "coordinator")), []PreparedBatch{r.item(fields)})
	case "expire":
		return fmt.Sprintf("expired=%d\n", r.m.RemoveExpired(parseKV(r, fields[1:]).int("now", -1)))
	case "snapshot-reload":
		dir := r.t.TempDir()
		if err := r.m.WriteSnapshot(vfs.Default, dir, r.m.LastOffset()); err != nil {
			r.fail("%v", err)
		}
		m, _, err := LoadLatestSnapshot(vfs.Default, dir, r.m.LastOffset(), r.m.cfg, nil, r.m.metrics)
		if err != nil {
			r.fail("%v", err)
		}
		r.m = m
		return "ok\n"
	case "entry":
		return r.entry(parseKV(r, fields[1:]).int("pid", -1))
	case "producers":
		var ids []string
		for _, e := range r.m.Entries() {
			ids = append(ids, strconv.FormatInt(e.ProducerID, 10))
		}
		if r.m.Len() != len(ids) {
			r.fail("Len %d, Entries %d", r.m.Len(), len(ids))
		}
		return fmt.Sprintf("producers=%d ids=%s\n", len(ids), orNone(ids))
	case "lso":
		if fuo, ok := r.m.FirstUnstableOffset(); ok {
			return fmt.Sprintf("lso=%d\n", fuo)
		}
		return "lso=none\n"
	case "ongoing":
		var got []string
		for _, tx := range r.m.OngoingTxns() {
			got = append(got, fmt.Sprintf("%d@%d", tx.ProducerID, tx.FirstOffset))
		}
		return orNone(got) + "\n"
	case "anomalies":
		return r.anomalies()
	case "end":
		return fmt.Sprintf("end=%d\n", r.m.LastOffset())
	}
	r.fail("unknown directive %q", d.Cmd)
	return ""
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

func (r *scriptRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s\n\t%s", r.where, fmt.Sprintf(format, args...))
}

func (r *scriptRun) reset(cfg Config) {
	r.reg = prometheus.NewRegistry()
	r.m = NewManager(cfg, nil, NewMetrics(r.reg))
}

func (r *scriptRun) origin(s string) Origin {
	switch s {
	case "client":
		return OriginClient
	case "replication":
		return OriginReplication
	case "coordinator":
		return OriginCoordinator
	}
	r.fail("unknown origin %q", s)
	return 0
}

// append prepares and applies bs, and prints the outcome.
func (r *scriptRun) append(origin Origin, bs []PreparedBatch) string {
	p, err := r.m.Prepare(origin, bs, testTS)
	if err != nil {
		var dup *DuplicateError
		if errors.As(err, &dup) {
			return fmt.Sprintf("duplicate offset=%d-%d\n", dup.FirstOffset, dup.LastOffset)
		}
		for name, e := range errorNames {
			if errors.Is(err, e) {
				return "error " + name + "\n"
			}
		}
		r.fail("an error the scripts do not name: %v", err)
	}
	var b strings.Builder
	b.WriteString("ok\n")
	for _, c := range p.Apply() {
		what := "commit"
		if c.Aborted {
			what = "abort"
		}
		fmt.Fprintf(&b, "completed pid=%d offset=%d-%d %s lso=%d\n", c.ProducerID, c.FirstOffset, c.LastOffset, what, c.LastStableOffset)
	}
	return b.String()
}

type kvs struct {
	r     *scriptRun
	m     map[string]string
	flags map[string]bool
}

func parseKV(r *scriptRun, fields []string) kvs {
	kv := kvs{r: r, m: map[string]string{}, flags: map[string]bool{}}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv.m[k] = v
		} else {
			kv.flags[f] = true
		}
	}
	return kv
}

func (kv kvs) str(k, def string) string {
	if v, ok := kv.m[k]; ok {
		return v
	}
	return def
}

func (kv kvs) has(k string) bool { _, ok := kv.m[k]; return ok }

func (kv kvs) int(k string, def int64) int64 {
	v, ok := kv.m[k]
	if !ok {
		if def == -1 {
			kv.r.fail("missing %s=", k)
		}
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		kv.r.fail("%s=%q: %v", k, v, err)
	}
	return n
}

// rng parses "X" or "X-Y" (Y may be below X for a wrapping sequence).
func (kv kvs) rng(k string) (int64, int64) {
	v, ok := kv.m[k]
	if !ok {
		kv.r.fail("missing %s=", k)
	}
	return kv.r.parseRange(v)
}

func (r *scriptRun) parseRange(v string) (int64, int64) {
	a, b, ok := strings.Cut(v, "-")
	x, err1 := strconv.ParseInt(a, 10, 64)
	y, err2 := x, error(nil)
	if ok {
		y, err2 = strconv.ParseInt(b, 10, 64)
	}
	if err1 != nil || err2 != nil {
		r.fail("bad range %q", v)
	}
	return x, y
}

func (r *scriptRun) item(fields []string) PreparedBatch {
	if len(fields) == 0 {
		r.fail("empty item")
	}
	kv := parseKV(r, fields[1:])
	switch fields[0] {
	case "data":
		first, last := kv.rng("offset")
		n := int32(last - first + 1)
		seqFirst, seqLast := int64(-1), int64(-1) // seq=none: no sequence
		if kv.m["seq"] != "none" {
			seqFirst, seqLast = kv.rng("seq")
		}
		if kv.m["seq"] != "none" && kv.m["seq"] != strconv.FormatInt(seqFirst, 10) && int64(batch.IncrementSequence(int32(seqFirst), n-1)) != seqLast {
			r.fail("seq=%s does not fit %d records", kv.m["seq"], n)
		}
		b := dataBatch(kv.int("pid", -1), int16(kv.int("epoch", -1)), int32(seqFirst), n, first, kv.flags["txn"])
		if kv.has("ts") {
			b.Header.MaxTimestamp = kv.int("ts", 0)
		}
		return b
	case "nopid":
		first, last := kv.rng("offset")
		return dataBatch(-1, -1, -1, int32(last-first+1), first, false)
	case "commit", "abort":
		return marker(fields[0] == "commit", kv.int("pid", -1), int16(kv.int("epoch", -1)),
			int32(kv.int("coord", -1)), kv.int("offset", -1))
	case "marker":
		if len(fields) < 2 {
			r.fail("marker commit|abort …")
		}
		return r.item(fields[1:])
	case "barrier":
		return barrier(kv.int("offset", -1))
	case "control":
		raw := batch.ControlBatch{Type: batch.ControlType(kv.int("type", -1)), ProducerID: -1, ProducerEpoch: -1,
			Timestamp: testTS}.Build()
		return controlAt(raw, kv.int("offset", -1))
	case "badcontrol": // a COMMIT marker flagged as compressed: undecodable
		raw := batch.EndTxnBatch(true, kv.int("pid", -1), 0, 0, testTS)
		raw[22] |= batch.CodecGzip
		return controlAt(raw, kv.int("offset", -1))
	case "txnbarrier":
		v := batch.MirrorPidResetRecord{SourceClusterID: "x"}
		raw := batch.ControlBatch{Type: batch.ControlMirrorPidReset, ProducerID: kv.int("pid", 1), ProducerEpoch: 0,
			Transactional: true, Timestamp: testTS, Value: v.AppendTo(nil)}.Build()
		return controlAt(raw, kv.int("offset", -1))
	}
	r.fail("unknown item %q", fields[0])
	return PreparedBatch{}
}

var errorNames = map[string]error{
	"OutOfOrderSequence":           ErrOutOfOrderSequence,
	"InvalidProducerEpoch":         ErrInvalidProducerEpoch,
	"InvalidTxnState":              ErrInvalidTxnState,
	"TransactionCoordinatorFenced": ErrTransactionCoordinatorFenced,
	"ControlBatchFromClient":       ErrControlBatchFromClient,
	"MalformedControl":             ErrMalformedControl,
}

// entry prints producer pid's entry, or none.
func (r *scriptRun) entry(pid int64) string {
	e, ok := r.m.Entry(pid)
	if !ok {
		return "none\n"
	}
	var seqs, offs []string
	for _, b := range e.Batches {
		seqs = append(seqs, fmt.Sprintf("%d-%d", b.FirstSeq, b.LastSeq))
		offs = append(offs, fmt.Sprintf("%d-%d", b.FirstOffset, b.LastOffset))
	}
	return fmt.Sprintf("pid=%d epoch=%d coord=%d txn=%d ts=%d seqs=%s offsets=%s\n",
		e.ProducerID, e.Epoch, e.CoordinatorEpoch, e.CurrentTxnFirstOffset, e.LastTimestamp, orNone(seqs), orNone(offs))
}

// anomalies prints the replication anomaly counters that are not zero, by
// kind (none when all are).
func (r *scriptRun) anomalies() string {
	mfs, err := r.reg.Gather()
	if err != nil {
		r.fail("%v", err)
	}
	var got []string
	for _, mf := range mfs {
		if mf.GetName() != "minibroker_psm_replication_anomalies_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if v := mt.GetCounter().GetValue(); v != 0 {
					got = append(got, fmt.Sprintf("%s=%v", l.GetValue(), v))
				}
			}
		}
	}
	sort.Strings(got)
	return orNone(got) + "\n"
}
