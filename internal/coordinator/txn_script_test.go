package coordinator

// Scripted transaction state-machine tests: testdata/txn_*.txt in the
// datadriven format (github.com/cockroachdb/datadriven): a directive,
// "----", and what the machine answered. Events print their outcome;
// queries print the state. Time is injected with "now". -rewrite
// regenerates the answers (read the diff).
//
// Events (each prints "error NAME" when refused):
//
//	config max-timeout=MS expiration=MS     fresh machine with these settings
//	now MS                                  set the clock
//	next-pid N                              the next producer id handed out
//	fail-persist on|off                     make persisting fail
//	init id= timeout= [pid= epoch=]         InitProducerId (pid/epoch: KIP-360): pid=N epoch=N
//	add id= pid= epoch= parts=T-P,...       AddPartitionsToTxn: ok
//	offsets id= pid= epoch= group=          AddOffsetsToTxn: ok
//	end id= pid= epoch= commit|abort        EndTxn: ok
//	complete                                CompleteMarkers for the last job: ok
//	tick                                    abort timed-out txns, expire ids:
//	                                        timedout=ID,...|none expired=ID,...|none
//	check-produce id= pid= epoch= tp=T-P    CheckProduce: ok
//	check-offsets id= pid= epoch= group=    CheckTxnOffsetCommit: ok
//	load id= pid= epoch= [state=] [timeout=] install a state as if read
//	                                        from the log (e.g. a high epoch)
//	reload                                  replay the persisted records into
//	                                        a new machine (through the codec)
//
// An event that leaves marker work prints "job commit|abort pid= epoch=
// parts=... [groups]" after its outcome.
//
// Queries:
//
//	state id=                               the id's metadata, or none
//	pending                                 PendingMarkers' ids, or none
//	deadline                                NextDeadline, or none
//	persisted                               records persisted so far

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
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
	records  []TopicRecord
	err      error
	init     InitResult
	job      *MarkerJob
	prevJob  *MarkerJob
	timedOut []string
	expired  []string
}

func (s *txnScript) fresh() {
	s.records = nil
	s.m = NewTxnMachine(s.cfg, func() (int64, error) { s.nextPID++; return s.nextPID - 1, nil }, s.persist)
}

func (s *txnScript) persist(md TxnMetadata) error {
	if s.failing {
		return errors.New("injected persist failure")
	}
	s.records = append(s.records, TopicRecord{Key: txnKey(md.TransactionalID), Value: txnValue(md)})
	return nil
}

func runTxnScript(t *testing.T, path string) {
	s := &txnScript{t: t, cfg: TxnConfig{MaxTimeoutMs: 900_000, IDExpirationMs: 604_800_000}}
	s.fresh()
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		s.t, s.where = t, d.Pos+": "+d.FullCmd()
		fields := strings.Fields(d.FullCmd())
		if out, ok := s.query(fields[0], fields[1:]); ok {
			return out
		}
		return s.event(fields[0], fields[1:])
	})
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

func (s *txnScript) event(cmd string, args []string) string {
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
			// Read back as the start-up reads __transaction_state.
			id, md, live, err := decodeTxnRecord(r.Key, r.Value)
			if err != nil {
				s.t.Fatalf("%s: decode: %v", s.where, err)
			}
			if !live {
				md = TxnMetadata{TransactionalID: id, State: TxnDead}
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
	return s.outcome(cmd)
}

// outcome prints what the last event answered: its error, or its result,
// and the marker job it left.
func (s *txnScript) outcome(cmd string) string {
	var b strings.Builder
	switch {
	case s.err != nil:
		name := ""
		for n, e := range txnErrNames {
			if errors.Is(s.err, e) {
				name = n
			}
		}
		if name == "" {
			s.t.Fatalf("%s: an error the scripts do not name: %v", s.where, s.err)
		}
		fmt.Fprintf(&b, "error %s\n", name)
	case cmd == "init":
		fmt.Fprintf(&b, "pid=%d epoch=%d\n", s.init.ProducerID, s.init.ProducerEpoch)
	case cmd == "tick":
		fmt.Fprintf(&b, "timedout=%s expired=%s\n", orNone(s.timedOut), orNone(s.expired))
	case cmd == "add", cmd == "offsets", cmd == "end", cmd == "complete", cmd == "check-produce", cmd == "check-offsets":
		b.WriteString("ok\n")
	}
	if j := s.job; j != nil {
		fmt.Fprintf(&b, "job %s pid=%d epoch=%d parts=%s", endName(j.Commit), j.ProducerID, j.ProducerEpoch, fmtParts(j.Partitions))
		if j.HasGroups {
			b.WriteString(" groups")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

func (s *txnScript) lastJob() *MarkerJob {
	if s.prevJob == nil {
		s.t.Fatalf("%s: no job to complete", s.where)
	}
	return s.prevJob
}

// query prints the state a query asks for; ok is false when cmd is not a
// query.
func (s *txnScript) query(cmd string, args []string) (out string, ok bool) {
	switch cmd {
	case "state":
		md, ok := s.m.Get(kv(args)["id"])
		if !ok {
			return "none\n", true
		}
		groups := strings.Join(md.Groups, ",")
		if groups == "" {
			groups = "none"
		}
		return fmt.Sprintf("state=%s pid=%d epoch=%d last-pid=%d last-epoch=%d parts=%s groups=%s start=%d timeout=%d updated=%d\n",
			md.State, md.ProducerID, md.ProducerEpoch, md.LastProducerID, md.LastProducerEpoch, fmtParts(md.Partitions),
			groups, md.StartMs, md.TimeoutMs, md.LastUpdateMs), true
	case "pending":
		var ids []string
		for _, j := range s.m.PendingMarkers() {
			ids = append(ids, j.TransactionalID)
		}
		return "pending=" + orNone(ids) + "\n", true
	case "deadline":
		if d, ok := s.m.NextDeadline(); ok {
			return fmt.Sprintf("deadline=%d\n", d), true
		}
		return "deadline=none\n", true
	case "persisted":
		return fmt.Sprintf("persisted=%d\n", len(s.records)), true
	}
	return "", false
}
