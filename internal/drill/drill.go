// Package drill runs a failover drill between two Kafka-protocol clusters:
// a canary producer writes numbered records to the primary (A), a consumer
// group reads them, the drill asks the standby's (B's) admin API for the
// failover plan, fails over with `mirror stop`, moves the producer and the
// group to B, and measures what happened: records acknowledged on A that
// never reached B (the RPO), the time from the stop command to the first
// produce and consume on B (the RTO), and the gaps, duplicates and
// out-of-order records the group saw. It talks to the clusters only over
// the Kafka protocol and the admin HTTP API, so it works against brokers
// started from the binary, docker compose or minibrokertest alike.
package drill

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/adminclient"
	"github.com/minibroker/minibroker/internal/mirror"
)

// Config is a drill.
type Config struct {
	From, To []string // Kafka bootstrap addresses of A and B
	ToAdmin  string   // B's admin HTTP address (host:port)
	Mirror   string   // the mirror on B that mirrors the topics from A
	Topics   []string
	Duration time.Duration // total: half on A, half on B (default 10s)
	Rate     int           // records per second (default 50)
	// Settle bounds the wait, after the producer left A, for the mirror
	// to catch up before the plan (a planned cutover; default 10s).
	Settle time.Duration
	// Admin, when set, is the client of B's admin API (the CLI passes
	// its own, with the token and TLS settings); nil sends plain HTTP to
	// ToAdmin.
	Admin *adminclient.Client
	// Failback, after the phase on B, has A mirror B (mirror
	// FailbackMirror, created on A through FromAdmin or FromAdminClient),
	// fails over to A again and runs a third phase there.
	Failback bool
	// Transactional makes the canary producer transactional (one
	// committed transaction per record, transactional id
	// minibroker-drill-RUN); it is idempotent either way.
	Transactional  bool
	FailbackMirror string // default "drill-failback"
	// AllowTruncate lets the failback's start cut A's records past where
	// A diverges from B (those B never had), as `mirror start
	// --allow-truncate`; without it such a drill stops before the start
	// and says how many records it would cut.
	AllowTruncate   bool
	FromAdmin       string
	FromAdminClient *adminclient.Client
}

// Report is what a drill measured.
type Report struct {
	Mirror string   `json:"mirror"`
	Topics []string `json:"topics"`
	// Plan is the dry run the drill asked for just before the stop;
	// FailbackPlan the one on A before the failback's stop.
	// FailbackStartPlan is the plan on A before its mirror of B starts:
	// what the start's divergence truncation would cut from A.
	Plan              mirror.Plan  `json:"plan"`
	FailbackStartPlan *mirror.Plan `json:"failback_start_plan,omitempty"`
	FailbackPlan      *mirror.Plan `json:"failback_plan,omitempty"`
	AckedOnA2         int          `json:"acked_on_a_after_failback"`
	// PredictedLoss is what the plans predicted the failovers lose: the
	// acknowledged records (lost_records) when every partition's batches
	// were read, else offsets (truncated and missing); PredictedUnit says
	// which ("records" or "offsets"). A failback's divergence truncation
	// is added in offsets either way.
	PredictedLoss int64  `json:"predicted_loss"`
	PredictedUnit string `json:"predicted_unit"`
	AckedOnA      int    `json:"acked_on_a"`
	AckedOnB      int    `json:"acked_on_b"`
	ProduceErrors int    `json:"produce_errors"`
	// LostAtFailover: acknowledged on A, absent from B after the stop
	// (the measured RPO in records; with a failback: acknowledged on A or
	// B, absent from A at the end); LostOnB: acknowledged on the last
	// primary (B, or A after a failback) and not stored there.
	LostAtFailover []int64 `json:"lost_at_failover"`
	LostOnB        []int64 `json:"lost_on_b"`
	// RPOMillis is the largest of the partitions' measured RPO in time.
	RPOMillis    int64 `json:"rpo_ms"`
	RTOProduceMs int64 `json:"rto_produce_ms"`
	RTOConsumeMs int64 `json:"rto_consume_ms"`
	// What the group saw, on A then on B.
	Consumed   int     `json:"consumed"`
	Gaps       []int64 `json:"gaps"`
	Duplicates []int64 `json:"duplicates"`
	// ReadAgain counts the duplicates a failover explains: the group
	// resumes on the new primary at the commit the mirror had synced
	// there, so it reads again what it had read on the old primary past
	// that commit and up to its last commit there (offsets are the same
	// on both clusters). Unexplained lists every other duplicate; any
	// fails the drill.
	ReadAgain   int     `json:"read_again_at_failover"`
	Unexplained []int64 `json:"unexplained_duplicates"`
	OutOfOrder  []int64 `json:"out_of_order"`
	Timeline    []Event `json:"timeline"`
	// Partitions is the same per partition of the drilled topics (the
	// canary writes to every one, in turn).
	Partitions []PartitionReport `json:"partitions"`
	StopAtMs   int64             `json:"stop_at_ms"`
	StartMs    int64             `json:"start_ms"`
	EndMs      int64             `json:"end_ms"`
	// Problems lists why the drill failed; empty when it passed.
	Problems []string `json:"problems"`
	Passed   bool     `json:"passed"`

	final string           // the label of the last phase's cluster: B, or A2 after a failback
	where map[int64]target // seq → the partition it was written to
	ackAt map[int64]int64  // seq → when it was acknowledged (unix ms)
}

// target is one partition of a drilled topic.
type target struct {
	Topic     string
	Partition int32
}

// Event is one record produced (acked) or consumed, on a cluster.
type Event struct {
	AtMs    int64  `json:"at_ms"`
	Kind    string `json:"kind"` // acked, consumed, duplicate, gap
	Cluster string `json:"cluster"`
	Seq     int64  `json:"seq"`
}

type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) add(kind, cluster string, seq int64) {
	r.mu.Lock()
	r.events = append(r.events, Event{AtMs: time.Now().UnixMilli(), Kind: kind, Cluster: cluster, Seq: seq})
	r.mu.Unlock()
}

// Run runs the drill; the report's Passed is false (and Problems say why)
// on any loss the plan did not predict, any gap, or a failed step.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 50
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 10 * time.Second
	}
	if len(cfg.Topics) == 0 || len(cfg.From) == 0 || len(cfg.To) == 0 || (cfg.ToAdmin == "" && cfg.Admin == nil) || cfg.Mirror == "" {
		return nil, fmt.Errorf("drill: from, to, to-admin, mirror and topics are required")
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	group := "minibroker-drill-" + run
	rep := &Report{Mirror: cfg.Mirror, Topics: cfg.Topics, StartMs: time.Now().UnixMilli(),
		LostAtFailover: []int64{}, LostOnB: []int64{}, Gaps: []int64{}, Duplicates: []int64{}, Unexplained: []int64{}, OutOfOrder: []int64{}, Problems: []string{}, Partitions: []PartitionReport{}}
	rec := &recorder{}
	acked := map[int64]string{} // seq → cluster
	var ackMu sync.Mutex
	seq := int64(0)
	var targets []target // every partition of the topics, set before the first produce

	produce := func(cluster string, seeds []string, d time.Duration) error {
		opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(3), kgo.ProducerLinger(0)}
		if cfg.Transactional {
			opts = append(opts, kgo.TransactionalID("minibroker-drill-"+run), kgo.TransactionTimeout(10*time.Second))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		defer cl.Close()
		tick := time.NewTicker(time.Second / time.Duration(cfg.Rate))
		defer tick.Stop()
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
			s := seq
			seq++
			to := targets[int(s)%len(targets)]
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			var err error
			if cfg.Transactional {
				err = cl.BeginTransaction()
			}
			if err == nil {
				err = cl.ProduceSync(pctx, &kgo.Record{Topic: to.Topic, Partition: to.Partition, Value: []byte(fmt.Sprintf("drill-%s-%d", run, s))}).FirstErr()
			}
			if cfg.Transactional {
				// Acknowledged only when committed; a failed record aborts.
				if eerr := cl.EndTransaction(pctx, kgo.TransactionEndTry(err == nil)); err == nil {
					err = eerr
				}
			}
			cancel()
			if err != nil {
				rep.ProduceErrors++
				continue
			}
			ackMu.Lock()
			acked[s] = cluster
			rep.where[s], rep.ackAt[s] = to, time.Now().UnixMilli()
			ackMu.Unlock()
			rec.add("acked", cluster, s)
		}
		return nil
	}

	seen := map[int64]int{}
	firstRead := map[int64]readAt{}      // seq → where the group first read it
	resumed := map[string]resumeWindow{} // phase label → what its move explains
	var seenMu sync.Mutex
	lastByPart := map[target]int64{}
	// consume starts the group's consumer on a cluster; its goroutine
	// closes done once ctx is cancelled.
	consume := func(ctx context.Context, cluster string, seeds []string) (*kgo.Client, chan struct{}, error) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(cfg.Topics...),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			return nil, nil, err
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					return
				}
				fs.EachRecord(func(r *kgo.Record) {
					s, ok := parseSeq(r.Value, run)
					if !ok {
						return
					}
					seenMu.Lock()
					seen[s]++
					dup := seen[s] > 1
					if dup {
						rep.Duplicates = append(rep.Duplicates, s)
						if resumed[cluster].explains(firstRead[s], target{r.Topic, r.Partition}, r.Offset) {
							rep.ReadAgain++
						} else {
							rep.Unexplained = append(rep.Unexplained, s)
						}
					} else {
						firstRead[s] = readAt{cluster, r.Offset}
						if last, ok := lastByPart[target{r.Topic, r.Partition}]; ok && s < last {
							rep.OutOfOrder = append(rep.OutOfOrder, s)
						}
					}
					if k := (target{r.Topic, r.Partition}); s > lastByPart[k] {
						lastByPart[k] = s
					}
					seenMu.Unlock()
					if dup {
						rec.add("duplicate", cluster, s)
					} else {
						rec.add("consumed", cluster, s)
					}
				})
			}
		}()
		return cl, done, nil
	}

	adminB := cfg.Admin
	if adminB == nil {
		adminB = adminclient.New(adminclient.Options{Addr: cfg.ToAdmin, Timeout: 2 * time.Minute, Agent: "drill"})
	}
	// A drill needs a live mirror: against one already stopped every
	// record on A is lost, and the plan (nothing left to cut) would not
	// say so.
	// PREPARING (a mirror just started) is waited for, up to Settle.
	for deadline := time.Now().Add(cfg.Settle); ; time.Sleep(100 * time.Millisecond) {
		pre, err := adminB.PlanMirror(ctx, cfg.Mirror, cfg.Topics)
		if err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
		var notReady error
		for _, p := range pre.Partitions {
			if p.State != mirror.Mirroring {
				notReady = fmt.Errorf("drill: %s-%d of mirror %s is %s, not MIRRORING", p.Topic, p.Partition, cfg.Mirror, p.State)
				if p.State != mirror.Preparing {
					return nil, notReady
				}
			}
		}
		if notReady == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, notReady
		}
	}

	var err error
	if targets, err = partitionsOf(ctx, cfg.From, cfg.Topics); err != nil {
		return nil, err
	}
	rep.where, rep.ackAt = map[int64]target{}, map[int64]int64{}

	// Phase 1: on A.
	cctxA, stopA := context.WithCancel(ctx)
	ca, doneA, err := consume(cctxA, "A", cfg.From)
	if err != nil {
		stopA()
		return nil, err
	}
	if err := produce("A", cfg.From, cfg.Duration/2); err != nil {
		stopA()
		ca.Close()
		return nil, err
	}
	time.Sleep(500 * time.Millisecond) // let the group read the tail and commit
	stopA()
	<-doneA
	ca.CommitUncommittedOffsets(ctx)
	ca.Close()
	commitsA, err := committedOffsets(ctx, cfg.From, group)
	if err != nil {
		return nil, fmt.Errorf("the group's commits on A: %w", err)
	}

	// Plan, after the producer left A and the mirror had up to Settle to
	// catch up (a planned cutover).
	deadline := time.Now().Add(cfg.Settle)
	for {
		if rep.Plan, err = adminB.PlanMirror(ctx, cfg.Mirror, cfg.Topics); err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
		if !rep.Plan.AtRisk || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	rep.PredictedLoss, rep.PredictedUnit = predicted(rep.Plan)

	// Failover.
	rep.StopAtMs = time.Now().UnixMilli()
	if _, err := adminB.StopMirror(ctx, cfg.Mirror, mirror.TopicsRequest{Topics: cfg.Topics, Wait: true}); err != nil {
		return nil, fmt.Errorf("mirror stop: %w", err)
	}

	// Phase 2: on B, where the group resumes at the commits the mirror
	// synced.
	commitsB, err := committedOffsets(ctx, cfg.To, group)
	if err != nil {
		return nil, fmt.Errorf("the group's commits on B: %w", err)
	}
	seenMu.Lock()
	resumed["B"] = resumeWindow{from: "A", synced: commitsB, last: commitsA}
	seenMu.Unlock()
	cctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	cb, doneB, err := consume(cctxB, "B", cfg.To)
	if err != nil {
		return nil, err
	}
	defer cb.Close()
	if err := produce("B", cfg.To, cfg.Duration/2); err != nil {
		return nil, err
	}
	drainGroup := func(label string) {
		// Wait for the group to read what label acknowledged (bounded).
		drain := time.Now().Add(5 * time.Second)
		for time.Now().Before(drain) && !allSeen(acked, seen, &ackMu, &seenMu, label) {
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
	}
	drainGroup("B")
	stopB()
	<-doneB
	cb.CommitUncommittedOffsets(ctx)
	lastOnB, err := committedOffsets(ctx, cfg.To, group)
	if err != nil {
		return nil, fmt.Errorf("the group's commits on B: %w", err)
	}
	final, finalLabel := cfg.To, "B"

	if cfg.Failback {
		adminA := cfg.FromAdminClient
		if adminA == nil {
			adminA = adminclient.New(adminclient.Options{Addr: cfg.FromAdmin, Timeout: 2 * time.Minute, Agent: "drill"})
		}
		name := cfg.FailbackMirror
		if name == "" {
			name = "drill-failback"
		}
		if _, err := adminA.CreateMirror(ctx, mirror.CreateRequest{Name: name, Source: cfg.To}); err != nil {
			return nil, fmt.Errorf("failback: create mirror on A: %w", err)
		}
		// Before the start: what its divergence truncation cuts from A.
		sp, err := adminA.PlanMirror(ctx, name, cfg.Topics)
		if err != nil {
			return nil, fmt.Errorf("failback start plan: %w", err)
		}
		rep.FailbackStartPlan = &sp
		rep.PredictedLoss += sp.DivergenceTruncate
		if sp.DivergenceTruncate > 0 && !cfg.AllowTruncate {
			return nil, fmt.Errorf("failback: starting mirror %s on A would cut %d of A's records past where A diverges from B (mirror plan on A shows them per partition); run the drill with --allow-truncate to rehearse that cut", name, sp.DivergenceTruncate)
		}
		start := mirror.TopicsRequest{Topics: cfg.Topics, AllowTruncate: cfg.AllowTruncate}
		if _, err := adminA.StartMirror(ctx, name, start); err != nil {
			return nil, fmt.Errorf("failback: start mirror on A: %w", err)
		}
		var fp mirror.Plan
		deadline := time.Now().Add(cfg.Settle)
		for {
			if fp, err = adminA.PlanMirror(ctx, name, cfg.Topics); err != nil {
				return nil, fmt.Errorf("failback plan: %w", err)
			}
			mirroring := true
			for _, p := range fp.Partitions {
				mirroring = mirroring && p.State == mirror.Mirroring
			}
			if (mirroring && !fp.AtRisk) || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		rep.FailbackPlan = &fp
		n, unit := predicted(fp)
		rep.PredictedLoss += n
		if unit != rep.PredictedUnit {
			rep.PredictedUnit = "offsets"
		}
		if _, err := adminA.StopMirror(ctx, name, mirror.TopicsRequest{Topics: cfg.Topics, Wait: true}); err != nil {
			return nil, fmt.Errorf("failback: mirror stop on A: %w", err)
		}
		syncedA, err := committedOffsets(ctx, cfg.From, group)
		if err != nil {
			return nil, fmt.Errorf("the group's commits on A: %w", err)
		}
		seenMu.Lock()
		resumed["A2"] = resumeWindow{from: "B", synced: syncedA, last: lastOnB}
		seenMu.Unlock()
		cctxA2, stopA2 := context.WithCancel(ctx)
		defer stopA2()
		ca2, doneA2, err := consume(cctxA2, "A2", cfg.From)
		if err != nil {
			return nil, err
		}
		defer ca2.Close()
		if err := produce("A2", cfg.From, cfg.Duration/2); err != nil {
			return nil, err
		}
		drainGroup("A2")
		stopA2()
		<-doneA2
		final, finalLabel = cfg.From, "A2"
	}
	rep.EndMs = time.Now().UnixMilli()

	// What the final primary's log holds, read back from the start by a
	// plain consumer.
	onB, err := readAll(ctx, final, cfg.Topics, run)
	if err != nil {
		return nil, fmt.Errorf("read back: %w", err)
	}
	rep.final = finalLabel
	rep.analyse(acked, seen, onB, rec.events) // every goroutine has ended
	return rep, nil
}

// readAt is where the group read a record: the phase's cluster label and
// the record's offset.
type readAt struct {
	cluster string
	offset  int64
}

// resumeWindow is what a group's move to a new primary explains: the
// group, last on cluster from, resumes at the commits synced to the new
// primary, and reads again the offsets from there up to its last commit
// on from (a partition with no synced commit resumes at its start).
type resumeWindow struct {
	from         string
	synced, last map[target]int64
}

// explains reports whether reading the record at off of tp again, after
// first reading it at first, is the move's re-read.
func (w resumeWindow) explains(first readAt, tp target, off int64) bool {
	if w.from == "" || first.cluster != w.from || first.offset != off {
		return false
	}
	return off >= w.synced[tp] && off < w.last[tp]
}

// committedOffsets is the group's committed offset per partition on the
// cluster at seeds.
func committedOffsets(ctx context.Context, seeds []string, group string) (map[target]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	resps, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	out := map[target]int64{}
	resps.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 {
			out[target{o.Topic, o.Partition}] = o.At
		}
	})
	return out, nil
}

func allSeen(acked map[int64]string, seen map[int64]int, am, sm *sync.Mutex, label string) bool {
	am.Lock()
	defer am.Unlock()
	sm.Lock()
	defer sm.Unlock()
	for s, c := range acked {
		if c == label && seen[s] == 0 {
			return false
		}
	}
	return true
}

func parseSeq(v []byte, run string) (int64, bool) {
	rest, ok := strings.CutPrefix(string(v), "drill-"+run+"-")
	if !ok {
		return 0, false
	}
	s, err := strconv.ParseInt(rest, 10, 64)
	return s, err == nil
}

// readAll reads every committed record of the drill's run on a cluster.
func readAll(ctx context.Context, seeds, topics []string, run string) (map[int64]bool, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topics...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	out := map[int64]bool{}
	idle := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && idle < 3; {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			if s, ok := parseSeq(r.Value, run); ok {
				out[s] = true
				n++
			}
		})
		if n == 0 {
			idle++
		} else {
			idle = 0
		}
	}
	return out, nil
}

func (rep *Report) analyse(acked map[int64]string, seen map[int64]int, onB map[int64]bool, events []Event) {
	lost := map[int64]bool{}
	for s, c := range acked {
		switch c {
		case "A":
			rep.AckedOnA++
		case "B":
			rep.AckedOnB++
		case "A2":
			rep.AckedOnA2++
		}
		switch {
		case onB[s]:
		case c == rep.final:
			rep.LostOnB = append(rep.LostOnB, s)
			lost[s] = true
		default:
			rep.LostAtFailover = append(rep.LostAtFailover, s)
			lost[s] = true
		}
	}
	for s := range acked {
		if seen[s] == 0 && !lost[s] {
			rep.Gaps = append(rep.Gaps, s)
		}
	}
	for _, n := range seen {
		rep.Consumed += n
	}
	sortInts(rep.LostAtFailover)
	sortInts(rep.LostOnB)
	sortInts(rep.Gaps)
	sortInts(rep.Duplicates)
	sortInts(rep.OutOfOrder)
	rep.RTOProduceMs, rep.RTOConsumeMs = -1, -1
	for _, e := range events {
		if e.Cluster != "B" || e.AtMs < rep.StopAtMs {
			continue
		}
		if e.Kind == "acked" && rep.RTOProduceMs < 0 {
			rep.RTOProduceMs = e.AtMs - rep.StopAtMs
		}
		if e.Kind == "consumed" && rep.RTOConsumeMs < 0 && acked[e.Seq] == "B" {
			rep.RTOConsumeMs = e.AtMs - rep.StopAtMs
		}
	}
	rep.Timeline = events
	for _, s := range rep.Gaps {
		rep.Timeline = append(rep.Timeline, Event{AtMs: rep.EndMs, Kind: "gap", Cluster: acked[s], Seq: s})
	}
	rep.partitionReports(acked)
	if n := int64(len(rep.LostAtFailover)); n > 0 && n > rep.PredictedLoss {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d records acknowledged on A never reached B; the plan predicted at most %d %s", n, rep.PredictedLoss, rep.PredictedUnit))
	}
	if len(rep.LostOnB) > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d records acknowledged on the new primary (%s) after the failover are not in its log (silent loss): %v", len(rep.LostOnB), rep.final, head(rep.LostOnB)))
	}
	if len(rep.Gaps) > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("the group never saw %d stored records: %v", len(rep.Gaps), head(rep.Gaps)))
	}
	if rep.AckedOnB == 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("no produce succeeded on B (%d errors)", rep.ProduceErrors))
	}
	if rep.RTOConsumeMs < 0 {
		rep.Problems = append(rep.Problems, "the group consumed nothing produced on B")
	}
	if len(rep.Unexplained) > 0 {
		sortInts(rep.Unexplained)
		rep.Problems = append(rep.Problems, fmt.Sprintf("the group read %d records again that no failover explains (not between the commit synced to the new primary and the group's last commit on the old one): %v", len(rep.Unexplained), head(rep.Unexplained)))
	}
	rep.Passed = len(rep.Problems) == 0
}

func head(s []int64) []int64 {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

func sortInts(s []int64) { slices.Sort(s) }
