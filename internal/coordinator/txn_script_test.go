package coordinator

// Scripted transaction state-machine tests: testdata/txn_*.txt, one event
// per line, "expect" lines checking the outcome of the last event or the
// state after it (etcd raft's testdata model). Time is injected with "now".
//
//	config max-timeout=MS expiration=MS     fresh machine with these settings
//	now MS                                  set the clock
//	next-pid N                              the next producer id handed out
//	fail-persist on|off                     make persisting fail
//	init id= timeout= [pid= epoch=]         InitProducerId (pid/epoch: KIP-360)
//	add id= pid= epoch= parts=T-P,...       AddPartitionsToTxn
//	offsets id= pid= epoch= group=          AddOffsetsToTxn
//	end id= pid= epoch= commit|abort        EndTxn
//	complete                                CompleteMarkers for the last job
//	tick                                    abort timed-out txns, expire ids
//	check-produce id= pid= epoch= tp=T-P    CheckProduce
//	check-offsets id= pid= epoch= group=    CheckTxnOffsetCommit
//	load id= pid= epoch= [state=] [timeout=] install a state as if read
//	                                        from the log (e.g. a high epoch)
//	reload                                  replay the persisted records into
//	                                        a new machine (through the codec)
//
//	expect ok | expect error NAME | expect pid=N epoch=N
//	expect job none | expect job commit|abort pid= epoch= parts=... [groups]
//	expect state id= [state=] [pid=] [epoch=] [last-pid=] [last-epoch=]
//	       [parts=...|none] [groups=...|none] [start=] [timeout=]
//	expect no-state id=
//	expect timedout=ID,... | expect expired=ID,... (from the last tick)
//	expect pending=ID,...|none              PendingMarkers
//	expect deadline=MS|none                 NextDeadline
//	expect persisted=N                      records persisted so far

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestTxnScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/txn_*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runTxnScript(t, f) })
	}
}

var txnErrNames = map[string]error{
	"PRODUCER_FENCED":             ErrProducerFenced,
	"INVALID_PRODUCER_EPOCH":      ErrInvalidProducerEpoch,
	"INVALID_PRODUCER_ID_MAPPING": ErrInvalidProducerIDMapping,
	"CONCURRENT_TRANSACTIONS":     ErrConcurrentTransactions,
	"INVALID_TXN_STATE":           ErrInvalidTxnState,
	"INVALID_TRANSACTION_TIMEOUT": ErrInvalidTransactionTimeout,
	"INVALID_REQUEST":             ErrInvalidTransactionalID,
	"COORDINATOR_NOT_AVAILABLE":   ErrTxnLogUnavailable,
}

type txnScript struct {
	t        *testing.T
	where    string
	cfg      TxnConfig
	m        *TxnMachine
	now      int64
	nextPID  int64
	failing  bool
	records  [][]byte
	err      error
	init     InitResult
	job      *MarkerJob
	prevJob  *MarkerJob
	timedOut []string
	expired  []string
	checked  bool
}

func (s *txnScript) fresh() {
	s.records = nil
	s.m = NewTxnMachine(s.cfg, func() (int64, error) { s.nextPID++; return s.nextPID - 1, nil }, s.persist)
}

func (s *txnScript) persist(md TxnMetadata) error {
	if s.failing {
		return errors.New("injected persist failure")
	}
	s.records = append(s.records, encodeTxnRecord(md))
	return nil
}

func runTxnScript(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := &txnScript{t: t, cfg: TxnConfig{MaxTimeoutMs: 900_000, IDExpirationMs: 604_800_000}, checked: true}
	s.fresh()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s.where = fmt.Sprintf("%s:%d: %s", filepath.Base(path), n, line)
		fields := strings.Fields(line)
		if fields[0] == "expect" {
			s.expect(fields[1:])
			continue
		}
		if !s.checked {
			t.Fatalf("%s: previous event failed (%v) with no expect line", s.where, s.err)
		}
		s.event(fields[0], fields[1:])
	}
	if !s.checked {
		t.Fatalf("script ends after an unchecked failure: %v", s.err)
	}
}

func kv(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			v = "true"
		}
		out[k] = v
	}
	return out
}

func (s *txnScript) num(a map[string]string, k string, def int64) int64 {
	v, ok := a[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		s.t.Fatalf("%s: %s=%q: %v", s.where, k, v, err)
	}
	return n
}

func (s *txnScript) parts(v string) []TopicPartition {
	if v == "" || v == "none" {
		return nil
	}
	var out []TopicPartition
	for _, p := range strings.Split(v, ",") {
		i := strings.LastIndex(p, "-")
		n, err := strconv.Atoi(p[i+1:])
		if i < 0 || err != nil {
			s.t.Fatalf("%s: bad partition %q", s.where, p)
		}
		out = append(out, TopicPartition{Topic: p[:i], Partition: int32(n)})
	}
	return out
}

func fmtParts(ps []TopicPartition) string {
	if len(ps) == 0 {
		return "none"
	}
	var b []string
	for _, p := range ps {
		b = append(b, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
	}
	return strings.Join(b, ",")
}

func (s *txnScript) event(cmd string, args []string) {
	a := kv(args)
	id := a["id"]
	pid, epoch := s.num(a, "pid", -1), int16(s.num(a, "epoch", -1))
	s.err, s.job = nil, nil
	switch cmd {
	case "config":
		s.cfg = TxnConfig{MaxTimeoutMs: int32(s.num(a, "max-timeout", 900_000)), IDExpirationMs: s.num(a, "expiration", 604_800_000)}
		s.fresh()
	case "now":
		s.now = s.num(kv([]string{"now=" + args[0]}), "now", 0)
	case "next-pid":
		s.nextPID = s.num(kv([]string{"n=" + args[0]}), "n", 0)
	case "fail-persist":
		s.failing = args[0] == "on"
	case "init":
		s.init, s.job, s.err = s.m.InitProducerID(id, int32(s.num(a, "timeout", 60_000)), pid, epoch, s.now)
	case "add":
		s.err = s.m.AddPartitions(id, pid, epoch, s.parts(a["parts"]), s.now)
	case "offsets":
		s.err = s.m.AddOffsets(id, pid, epoch, a["group"], s.now)
	case "end":
		s.job, s.err = s.m.EndTxn(id, pid, epoch, a["commit"] == "true", s.now)
	case "complete":
		s.err = s.m.CompleteMarkers(s.lastJob(), s.now)
	case "tick":
		s.timedOut, s.expired = nil, nil
		for _, id := range s.m.TimedOut(s.now) {
			job, err := s.m.AbortTimedOut(id, s.now)
			if err != nil {
				s.err = err
				break
			}
			s.timedOut = append(s.timedOut, id)
			s.job = job
		}
		if s.err == nil {
			s.expired, s.err = s.m.ExpireIDs(s.now)
		}
	case "check-produce":
		tp := s.parts(a["tp"])
		s.err = s.m.CheckProduce(id, pid, epoch, tp[0])
	case "check-offsets":
		s.err = s.m.CheckTxnOffsetCommit(id, pid, epoch, a["group"])
	case "load":
		state, ok := ParseTxnState(a["state"])
		if !ok {
			state = TxnEmpty
		}
		s.m.Load(TxnMetadata{TransactionalID: id, ProducerID: pid, LastProducerID: -1, ProducerEpoch: epoch,
			LastProducerEpoch: -1, TimeoutMs: int32(s.num(a, "timeout", 60_000)), State: state,
			Partitions: s.parts(a["parts"]), StartMs: s.num(a, "start", -1), LastUpdateMs: s.now})
	case "reload":
		recs := s.records
		s.fresh()
		for _, r := range recs {
			body, n, ok := readTxnRecord(r)
			if !ok || n != len(r) {
				s.t.Fatalf("%s: record does not frame", s.where)
			}
			md, err := decodeTxnState(body)
			if err != nil {
				s.t.Fatalf("%s: decode: %v", s.where, err)
			}
			s.m.Load(md)
			s.records = append(s.records, r)
		}
	default:
		s.t.Fatalf("%s: unknown event %q", s.where, cmd)
	}
	if s.job != nil {
		s.prevJob = s.job
	}
	s.checked = s.err == nil
}

func (s *txnScript) lastJob() *MarkerJob {
	if s.prevJob == nil {
		s.t.Fatalf("%s: no job to complete", s.where)
	}
	return s.prevJob
}

func (s *txnScript) expect(args []string) {
	s.checked = true
	fail := func(format string, v ...any) { s.t.Fatalf("%s: "+format, append([]any{s.where}, v...)...) }
	switch {
	case args[0] == "ok":
		if s.err != nil {
			fail("unexpected error %v", s.err)
		}
	case args[0] == "error":
		want, ok := txnErrNames[args[1]]
		if !ok {
			fail("unknown error name")
		}
		if !errors.Is(s.err, want) {
			fail("got error %v, want %s", s.err, args[1])
		}
	case strings.HasPrefix(args[0], "pid="):
		if s.err != nil {
			fail("unexpected error %v", s.err)
		}
		a := kv(args)
		if got := fmt.Sprintf("pid=%d epoch=%d", s.init.ProducerID, s.init.ProducerEpoch); got != fmt.Sprintf("pid=%s epoch=%s", a["pid"], a["epoch"]) {
			fail("got %s", got)
		}
	case args[0] == "job":
		got := "none"
		if j := s.job; j != nil {
			got = fmt.Sprintf("%s pid=%d epoch=%d parts=%s", endName(j.Commit), j.ProducerID, j.ProducerEpoch, fmtParts(j.Partitions))
			if j.HasGroups {
				got += " groups"
			}
		}
		if want := strings.Join(args[1:], " "); got != want {
			fail("job: got %q want %q", got, want)
		}
	case args[0] == "state":
		a := kv(args[1:])
		md, ok := s.m.Get(a["id"])
		if !ok {
			fail("no state for %q", a["id"])
		}
		got := map[string]string{
			"state": md.State.String(), "pid": fmt.Sprint(md.ProducerID), "epoch": fmt.Sprint(md.ProducerEpoch),
			"last-pid": fmt.Sprint(md.LastProducerID), "last-epoch": fmt.Sprint(md.LastProducerEpoch),
			"parts": fmtParts(md.Partitions), "groups": strings.Join(md.Groups, ","), "start": fmt.Sprint(md.StartMs),
			"timeout": fmt.Sprint(md.TimeoutMs), "updated": fmt.Sprint(md.LastUpdateMs),
		}
		if got["groups"] == "" {
			got["groups"] = "none"
		}
		for k, want := range a {
			if k != "id" && got[k] != want {
				fail("%s: got %s want %s (state %+v)", k, got[k], want, md)
			}
		}
	case args[0] == "no-state":
		if _, ok := s.m.Get(kv(args[1:])["id"]); ok {
			fail("state present")
		}
	case strings.HasPrefix(args[0], "timedout="):
		if got := strings.Join(s.timedOut, ","); got != strings.TrimPrefix(args[0], "timedout=") {
			fail("timed out: %q", got)
		}
	case strings.HasPrefix(args[0], "expired="):
		if got := strings.Join(s.expired, ","); got != strings.TrimPrefix(args[0], "expired=") {
			fail("expired: %q", got)
		}
	case strings.HasPrefix(args[0], "pending="):
		var ids []string
		for _, j := range s.m.PendingMarkers() {
			ids = append(ids, j.TransactionalID)
		}
		got := strings.Join(ids, ",")
		if got == "" {
			got = "none"
		}
		if got != strings.TrimPrefix(args[0], "pending=") {
			fail("pending: %q", got)
		}
	case strings.HasPrefix(args[0], "deadline="):
		got := "none"
		if d, ok := s.m.NextDeadline(); ok {
			got = fmt.Sprint(d)
		}
		if got != strings.TrimPrefix(args[0], "deadline=") {
			fail("deadline: %s", got)
		}
	case strings.HasPrefix(args[0], "persisted="):
		if got := fmt.Sprint(len(s.records)); got != strings.TrimPrefix(args[0], "persisted=") {
			fail("persisted: %s", got)
		}
	default:
		fail("unknown expectation")
	}
}
