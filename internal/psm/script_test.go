package psm

// The scripted state-machine tests: testdata/*.txt, one event per line and
// "expect" lines checking the outcome of the last event or the state after
// it (etcd raft's testdata model). The language:
//
//	new [window=N] [expiration=MS]          fresh manager (one is made at start)
//	append ORIGIN ITEM [; ITEM]...          one append of several batches
//	marker commit|abort pid= epoch= coord= offset= [origin=]   (default coordinator)
//	barrier offset= [origin=]               MIRROR_PID_RESET (default coordinator)
//	expire now=MS                           RemoveExpired
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
//	expect ok | error NAME | duplicate offset=X-Y | expired=N
//	expect completed none | completed pid= offset=X-Y commit|abort lso=N [; ...]
//	expect entry pid= [epoch=] [coord=] [txn=] [seqs=A-B,..] [offsets=X-Y,..] [ts=]
//	expect no-entry pid=
//	expect producers=N [ids=1,2]
//	expect lso=N | lso=none
//	expect ongoing none | ongoing PID@OFFSET,...
//	expect anomalies KIND=N ...            (cumulative counter values)
//	expect end=N                           LastOffset
//
// An append that fails must be followed by an "expect error" or "expect
// duplicate" line.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/vfs"
)

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScript(t, f) })
	}
}

type scriptRun struct {
	t         *testing.T
	reg       *prometheus.Registry
	m         *Manager
	err       error
	completed []CompletedTxn
	expired   int
	unchecked bool // last event failed and no expect line looked at it yet
	where     string
}

func runScript(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &scriptRun{t: t}
	r.reset(Config{})
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r.where = fmt.Sprintf("%s:%d: %s", path, n, line)
		cmd, rest, _ := strings.Cut(line, " ")
		if cmd != "expect" && r.unchecked {
			r.fail("previous event failed unchecked: %v", r.err)
		}
		switch cmd {
		case "new":
			kv := parseKV(r, strings.Fields(rest))
			r.reset(Config{MaxBatchesPerProducer: int(kv.int("window", 0)), ProducerIDExpirationMs: kv.int("expiration", 0)})
		case "append":
			origin, items, _ := strings.Cut(rest, " ")
			var bs []PreparedBatch
			for _, item := range strings.Split(items, ";") {
				bs = append(bs, r.item(strings.Fields(item)))
			}
			r.append(r.origin(origin), bs)
		case "marker", "barrier":
			fields := strings.Fields(line)
			kv := parseKV(r, fields[1:])
			r.append(r.origin(kv.str("origin", "coordinator")), []PreparedBatch{r.item(fields)})
		case "expire":
			r.expired = r.m.RemoveExpired(parseKV(r, strings.Fields(rest)).int("now", -1))
		case "snapshot-reload":
			dir := t.TempDir()
			if err := r.m.WriteSnapshot(vfs.Default, dir, r.m.LastOffset()); err != nil {
				r.fail("%v", err)
			}
			m, _, err := LoadLatestSnapshot(vfs.Default, dir, r.m.LastOffset(), r.m.cfg, nil, r.m.metrics)
			if err != nil {
				r.fail("%v", err)
			}
			r.m = m
		case "expect":
			r.expect(rest)
		default:
			r.fail("unknown command %q", cmd)
		}
	}
	if r.unchecked {
		t.Errorf("%s: script ends with an unchecked failure: %v", path, r.err)
	}
}

func (r *scriptRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s\n\t%s", r.where, fmt.Sprintf(format, args...))
}

func (r *scriptRun) reset(cfg Config) {
	r.reg = prometheus.NewRegistry()
	r.m = NewManager(cfg, nil, NewMetrics(r.reg))
	r.err, r.completed, r.unchecked = nil, nil, false
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

func (r *scriptRun) append(origin Origin, bs []PreparedBatch) {
	p, err := r.m.Prepare(origin, bs, testTS)
	r.err, r.completed, r.unchecked = err, nil, err != nil
	if err == nil {
		r.completed = p.Apply()
	}
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

func (r *scriptRun) expect(rest string) {
	what, args, _ := strings.Cut(rest, " ")
	fields := strings.Fields(args)
	kv := parseKV(r, fields)
	if k, v, ok := strings.Cut(what, "="); ok { // expect lso=3, producers=2, end=7, expired=1
		kv.m[k] = v
		what = k
	}
	switch what {
	case "ok":
		if r.err != nil {
			r.fail("got error %v", r.err)
		}
	case "error":
		want, ok := errorNames[args]
		if !ok {
			r.fail("unknown error name %q", args)
		}
		if !errors.Is(r.err, want) {
			r.fail("want %v, got %v", want, r.err)
		}
		r.unchecked = false
	case "duplicate":
		var dup *DuplicateError
		if !errors.As(r.err, &dup) {
			r.fail("want a duplicate, got %v", r.err)
		}
		first, last := kv.rng("offset")
		if dup.FirstOffset != first || dup.LastOffset != last {
			r.fail("duplicate of %d-%d, want %d-%d", dup.FirstOffset, dup.LastOffset, first, last)
		}
		r.unchecked = false
	case "completed":
		r.expectCompleted(args)
	case "entry":
		r.expectEntry(kv)
	case "no-entry":
		if e, ok := r.m.Entry(kv.int("pid", -1)); ok {
			r.fail("entry exists: %+v", e)
		}
	case "producers":
		if got := r.m.Len(); int64(got) != kv.int("producers", -1) {
			r.fail("%d producers: %+v", got, r.m.Entries())
		}
		if ids, ok := kv.m["ids"]; ok {
			var got []string
			for _, e := range r.m.Entries() {
				got = append(got, strconv.FormatInt(e.ProducerID, 10))
			}
			if strings.Join(got, ",") != ids {
				r.fail("producer ids %v", got)
			}
		}
	case "lso":
		fuo, ok := r.m.FirstUnstableOffset()
		got := "none"
		if ok {
			got = strconv.FormatInt(fuo, 10)
		}
		if got != kv.m["lso"] {
			r.fail("first unstable offset %s", got)
		}
	case "ongoing":
		var got []string
		for _, tx := range r.m.OngoingTxns() {
			got = append(got, fmt.Sprintf("%d@%d", tx.ProducerID, tx.FirstOffset))
		}
		want := strings.TrimSpace(args)
		if (want == "none" && len(got) != 0) || (want != "none" && strings.Join(got, ",") != want) {
			r.fail("ongoing %v", got)
		}
	case "anomalies":
		for k := range kv.m {
			if got := counterValue(r.t, r.reg, "minibroker_psm_replication_anomalies_total", k); int64(got) != kv.int(k, -1) {
				r.fail("anomaly %s = %v", k, got)
			}
		}
	case "end":
		if got := r.m.LastOffset(); got != kv.int("end", -1) {
			r.fail("LastOffset %d", got)
		}
	case "expired":
		if int64(r.expired) != kv.int("expired", -1) {
			r.fail("expired %d", r.expired)
		}
	default:
		r.fail("unknown expectation %q", what)
	}
}

func (r *scriptRun) expectCompleted(args string) {
	if r.err != nil {
		r.fail("last event failed: %v", r.err)
	}
	var want []CompletedTxn
	if strings.TrimSpace(args) != "none" {
		for _, part := range strings.Split(args, ";") {
			kv := parseKV(r, strings.Fields(part))
			first, last := kv.rng("offset")
			if kv.flags["commit"] == kv.flags["abort"] {
				r.fail("completed needs commit or abort")
			}
			want = append(want, CompletedTxn{ProducerID: kv.int("pid", -1), FirstOffset: first, LastOffset: last,
				Aborted: kv.flags["abort"], LastStableOffset: kv.int("lso", -1)})
		}
	}
	if !slices.Equal(r.completed, want) {
		r.fail("completed %+v, want %+v", r.completed, want)
	}
}

func (r *scriptRun) expectEntry(kv kvs) {
	pid := kv.int("pid", -1)
	e, ok := r.m.Entry(pid)
	if !ok {
		r.fail("no entry for %d", pid)
	}
	check := func(key string, got int64) {
		if kv.has(key) && kv.int(key, 0) != got {
			r.fail("%s=%d, want %s (entry %+v)", key, got, kv.m[key], e)
		}
	}
	check("epoch", int64(e.Epoch))
	check("coord", int64(e.CoordinatorEpoch))
	check("txn", e.CurrentTxnFirstOffset)
	check("ts", e.LastTimestamp)
	if v, ok := kv.m["seqs"]; ok {
		var got []string
		for _, b := range e.Batches {
			got = append(got, fmt.Sprintf("%d-%d", b.FirstSeq, b.LastSeq))
		}
		if strings.Join(got, ",") != v && !(v == "none" && len(got) == 0) {
			r.fail("seqs %v (entry %+v)", got, e)
		}
	}
	if v, ok := kv.m["offsets"]; ok {
		var got []string
		for _, b := range e.Batches {
			got = append(got, fmt.Sprintf("%d-%d", b.FirstOffset, b.LastOffset))
		}
		if strings.Join(got, ",") != v && !(v == "none" && len(got) == 0) {
			r.fail("offsets %v (entry %+v)", got, e)
		}
	}
}
