package coordinator

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// Scripted group state-machine tests (testdata/group_*.txt) in the
// datadriven format (github.com/cockroachdb/datadriven): an event, "----",
// and what the event must print: replies to blocked JoinGroup/SyncGroup requests, the call's own
// result, and the state of the group(s) afterwards. Time is injected: "at
// MS" moves the clock to MS milliseconds and runs the timers. "restart"
// replays every record written so far (through the on-disk encoding) into
// a fresh core, "compact" does the same from a snapshot. Run with
// -rewrite to rewrite the expectations (and read the diff).
//
//	at MS
//	join GROUP w=NAME [member=ID] [inst=ID] [client=ID] [session=MS] [rebalance=MS] [protocols=p1,p2:meta] [type=T] [v=N]
//	sync GROUP w=NAME member=ID gen=N [inst=ID] [ptype=T] [proto=P] [assign=ID:data,...]
//	heartbeat GROUP member=ID gen=N [inst=ID]
//	leave GROUP ID|INST/ID ...
//	commit GROUP [member=ID] [gen=N] [inst=ID] TOPIC/P=OFFSET ...
//	fetch GROUP [stable] [TOPIC/P ...]
//	stage GROUP pid=N epoch=N TOPIC/P=OFFSET ...
//	txncheck GROUP [member=ID] [inst=ID] [gen=N]
//	complete pid=N commit|abort
//	admin GROUP TOPIC/P=OFFSET ...
//	delete GROUP ...
//	offsetdelete GROUP TOPIC/P ...
//	deletetopic TOPIC
//	clamp TOPIC/P END
//	describe GROUP | list | expire | restart | compact
func TestGroupScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/group_*.txt")
	if len(files) == 0 {
		t.Fatal("no group scripts")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runGroupScript(t, f) })
	}
}

var groupErrNames = map[error]string{
	nil: "NONE", ErrUnknownMemberID: "UNKNOWN_MEMBER_ID", ErrIllegalGeneration: "ILLEGAL_GENERATION",
	ErrRebalanceInProgress: "REBALANCE_IN_PROGRESS", ErrMemberIDRequired: "MEMBER_ID_REQUIRED",
	ErrFencedInstanceID: "FENCED_INSTANCE_ID", ErrInconsistentGroupProtocol: "INCONSISTENT_GROUP_PROTOCOL",
	ErrInvalidSessionTimeout: "INVALID_SESSION_TIMEOUT", ErrInvalidGroupID: "INVALID_GROUP_ID",
	ErrGroupIDNotFound: "GROUP_ID_NOT_FOUND", ErrNonEmptyGroup: "NON_EMPTY_GROUP",
	ErrGroupSubscribedToTopic: "GROUP_SUBSCRIBED_TO_TOPIC", ErrUnstableOffsetCommit: "UNSTABLE_OFFSET_COMMIT",
	ErrOffsetMetadataTooLarge: "OFFSET_METADATA_TOO_LARGE", ErrCoordinatorNotAvailable: "COORDINATOR_NOT_AVAILABLE",
	ErrGroupHasMembers: "GROUP_HAS_MEMBERS",
}

func gsErr(err error) string {
	if n, ok := groupErrNames[err]; ok {
		return n
	}
	return err.Error()
}

type groupScript struct {
	t       *testing.T
	cfg     GroupConfig
	core    *groupCore
	now     time.Time
	ids     int
	waiters map[Waiter]string
	names   map[string]Waiter
	log     []byte // every record written, as frames
	out     []string
}

var scriptEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newGroupScript(t *testing.T) *groupScript {
	s := &groupScript{
		t: t, now: scriptEpoch, waiters: map[Waiter]string{}, names: map[string]Waiter{},
		cfg: GroupConfig{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, OffsetsRetention: time.Hour},
	}
	s.core = newGroupCore(s.cfg, s.memberID)
	return s
}

func (s *groupScript) memberID(prefix string) string {
	s.ids++
	return fmt.Sprintf("%s-%d", prefix, s.ids)
}

func runGroupScript(t *testing.T, path string) {
	s := newGroupScript(t)
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		s.out = nil
		s.event(strings.Fields(d.FullCmd()))
		if len(s.out) == 0 {
			return ""
		}
		return strings.Join(s.out, "\n") + "\n"
	})
}

func (s *groupScript) printf(format string, args ...any) {
	s.out = append(s.out, fmt.Sprintf(format, args...))
}

func gsArgs(fields []string) (kv map[string]string, rest []string) {
	kv = map[string]string{}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok && !strings.Contains(k, "/") {
			kv[k] = v
		} else {
			rest = append(rest, f)
		}
	}
	return kv, rest
}

func gsInt(kv map[string]string, k string, def int64) int64 {
	v, ok := kv[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("%s=%q: %v", k, v, err))
	}
	return n
}

func gsTP(s string) TopicPartition {
	topic, p, _ := strings.Cut(s, "/")
	n, _ := strconv.Atoi(p)
	return TopicPartition{Topic: topic, Partition: int32(n)}
}

func gsOffsets(rest []string) map[TopicPartition]OffsetAndMetadata {
	m := map[TopicPartition]OffsetAndMetadata{}
	for _, r := range rest {
		k, v, _ := strings.Cut(r, "=")
		n, _ := strconv.ParseInt(v, 10, 64)
		m[gsTP(k)] = OffsetAndMetadata{Offset: n, LeaderEpoch: -1}
	}
	return m
}

func (s *groupScript) waiter(name string) Waiter {
	w := Waiter(len(s.waiters) + 1)
	s.waiters[w], s.names[name] = name, w
	return w
}

func (s *groupScript) event(f []string) {
	cmd, args := f[0], f[1:]
	group := ""
	if len(args) > 0 && !strings.Contains(args[0], "=") {
		group = args[0]
	}
	kv, rest := gsArgs(args)
	if len(rest) > 0 && rest[0] == group {
		rest = rest[1:]
	}
	switch cmd {
	case "at":
		ms, _ := strconv.ParseInt(args[0], 10, 64)
		s.now = scriptEpoch.Add(time.Duration(ms) * time.Millisecond)
		s.core.Tick(s.now)
		group = "*"
	case "config":
		s.cfg.InitialRebalanceDelay = time.Duration(gsInt(kv, "initial-delay", 0)) * time.Millisecond
		s.cfg.OffsetsRetention = time.Duration(gsInt(kv, "retention", int64(s.cfg.OffsetsRetention/time.Millisecond))) * time.Millisecond
		s.core.cfg = s.cfg
		if s.core.cfg.MaxMetadataSize == 0 {
			s.core.cfg.MaxMetadataSize = 4096
		}
	case "join":
		v := gsInt(kv, "v", 9)
		req := JoinRequest{
			Group: group, MemberID: kv["member"], InstanceID: kv["inst"], ClientID: "c", ClientHost: "/127.0.0.1",
			ProtocolType:         "consumer",
			SessionTimeout:       time.Duration(gsInt(kv, "session", 10000)) * time.Millisecond,
			RebalanceTimeout:     time.Duration(gsInt(kv, "rebalance", 5000)) * time.Millisecond,
			RequireKnownMemberID: v >= 4, SupportsSkipAssignment: v >= 9,
		}
		if c, ok := kv["client"]; ok {
			req.ClientID = c
		}
		if pt, ok := kv["type"]; ok {
			req.ProtocolType = pt
		}
		protos := "range"
		if p, ok := kv["protocols"]; ok {
			protos = p
		}
		for _, p := range strings.Split(protos, ",") {
			name, meta, _ := strings.Cut(p, ":")
			req.Protocols = append(req.Protocols, Protocol{Name: name, Metadata: []byte(meta)})
		}
		s.core.Join(s.now, req, s.waiter(kv["w"]))
	case "sync":
		req := SyncRequest{Group: group, MemberID: kv["member"], InstanceID: kv["inst"], Generation: int32(gsInt(kv, "gen", -1))}
		if v, ok := kv["ptype"]; ok {
			req.ProtocolType = &v
		}
		if v, ok := kv["proto"]; ok {
			req.Protocol = &v
		}
		if a, ok := kv["assign"]; ok {
			req.Assignments = map[string][]byte{}
			for _, x := range strings.Split(a, ",") {
				id, data, _ := strings.Cut(x, ":")
				req.Assignments[id] = []byte(data)
			}
		}
		s.core.Sync(s.now, req, s.waiter(kv["w"]))
	case "heartbeat":
		s.printf("heartbeat: %s", gsErr(s.core.Heartbeat(s.now, group, kv["member"], kv["inst"], int32(gsInt(kv, "gen", -1)))))
	case "leave":
		var ms []LeaveMember
		for _, r := range rest {
			if inst, id, ok := strings.Cut(r, "/"); ok {
				ms = append(ms, LeaveMember{InstanceID: inst, MemberID: id})
			} else {
				ms = append(ms, LeaveMember{MemberID: r})
			}
		}
		errs, top := s.core.Leave(s.now, group, ms)
		res := []string{gsErr(top)}
		for _, e := range errs {
			res = append(res, gsErr(e))
		}
		s.printf("leave: %s", strings.Join(res, " "))
	case "commit":
		offs := gsOffsets(rest)
		partErrs, top := s.core.CommitOffsets(s.now, CommitRequest{Group: group, MemberID: kv["member"], InstanceID: kv["inst"],
			Generation: int32(gsInt(kv, "gen", -1)), Offsets: offs})
		line := "commit: " + gsErr(top)
		for _, tp := range sortedTPs(partErrs) {
			line += fmt.Sprintf(" %s/%d=%s", tp.Topic, tp.Partition, gsErr(partErrs[tp]))
		}
		s.printf("%s", line)
	case "fetch":
		stable := false
		var tps []TopicPartition
		for _, r := range rest {
			if r == "stable" {
				stable = true
			} else {
				tps = append(tps, gsTP(r))
			}
		}
		var parts []string
		for _, fo := range s.core.FetchOffsets(group, tps, stable) {
			p := fmt.Sprintf("%s/%d=%d", fo.Topic, fo.Partition, fo.Offset)
			if fo.Err != nil {
				p += "(" + gsErr(fo.Err) + ")"
			}
			parts = append(parts, p)
		}
		s.printf("fetch: %s", strings.Join(parts, " "))
	case "stage":
		err := s.core.StageTxn(s.now, group, gsInt(kv, "pid", 0), int16(gsInt(kv, "epoch", 0)), gsOffsets(rest))
		s.printf("stage: %s", gsErr(err))
	case "txncheck":
		s.printf("txncheck: %s", gsErr(s.core.ValidateTxnMember(group, kv["member"], kv["inst"], int32(gsInt(kv, "gen", -1)))))
	case "complete":
		s.core.CompleteTxn(gsInt(kv, "pid", 0), 0, 0, len(rest) > 0 && rest[0] == "commit")
		group = "*"
	case "admin":
		s.printf("admin: %s", gsErr(s.core.CommitAdmin(s.now, group, gsOffsets(rest))))
	case "delete":
		var res []string
		for _, e := range s.core.DeleteGroups(s.now, args) {
			res = append(res, gsErr(e))
		}
		s.printf("delete: %s", strings.Join(res, " "))
		group = "*"
	case "offsetdelete":
		var tps []TopicPartition
		for _, r := range rest {
			tps = append(tps, gsTP(r))
		}
		partErrs, top := s.core.DeleteOffsets(s.now, group, tps)
		line := "offsetdelete: " + gsErr(top)
		for _, tp := range sortedTPs(partErrs) {
			line += fmt.Sprintf(" %s/%d=%s", tp.Topic, tp.Partition, gsErr(partErrs[tp]))
		}
		s.printf("%s", line)
	case "describe":
		d := s.core.DescribeGroup(group)
		line := fmt.Sprintf("describe: %s type=%q protocol=%q", d.State, d.ProtocolType, d.Protocol)
		for _, m := range d.Members {
			line += fmt.Sprintf(" [%s inst=%q meta=%q assign=%q]", m.MemberID, m.InstanceID, m.Metadata, m.Assignment)
		}
		s.printf("%s", line)
		return
	case "list":
		var gs []string
		for _, g := range s.core.ListGroups() {
			gs = append(gs, fmt.Sprintf("%s(%s,%q)", g.Group, g.State, g.ProtocolType))
		}
		s.printf("list: %s", strings.Join(gs, " "))
		return
	case "deletetopic":
		s.core.DeleteTopic(args[0])
		group = "*"
	case "clamp":
		end, _ := strconv.ParseInt(args[1], 10, 64)
		s.printf("clamp: %s", strings.Join(s.core.ClampOffsets(s.now, gsTP(args[0]), end), " "))
		group = "*"
	case "expire":
		s.core.ExpireOffsets(s.now)
		group = "*"
	case "restart", "compact":
		s.flushRecords()
		data := s.log
		if cmd == "compact" {
			data = groupLogHeader()
			recs := s.core.snapshotRecords()
			for i := range recs {
				data = appendFrame(data, &recs[i])
			}
			s.log = data
		}
		s.core = newGroupCore(s.cfg, s.memberID)
		s.core.replaying, s.core.replayNow = true, s.now
		if end, damaged := scanFrames(data, s.core.apply); end != len(data) || damaged != nil {
			s.t.Fatalf("replay: %d of %d bytes, damaged %v", end, len(data), damaged)
		}
		s.core.replaying = false
		group = "*"
	default:
		s.t.Fatalf("unknown event %q", cmd)
	}
	s.flushRecords()
	for _, r := range s.core.takeReplies() {
		s.printReply(r)
	}
	if group == "*" {
		ids := make([]string, 0, len(s.core.groups))
		for id := range s.core.groups {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			s.printGroup(id)
		}
	} else if group != "" {
		s.printGroup(group)
	}
}

func (s *groupScript) flushRecords() {
	if s.log == nil {
		s.log = groupLogHeader()
	}
	for _, r := range s.core.takeRecords() {
		s.log = appendFrame(s.log, &r)
	}
}

func (s *groupScript) printReply(r Reply) {
	name := s.waiters[r.Waiter]
	if j := r.Join; j != nil {
		line := fmt.Sprintf("%s: join %s member=%s gen=%d", name, gsErr(j.Err), j.MemberID, j.Generation)
		if j.Err == nil {
			line += fmt.Sprintf(" leader=%s protocol=%s", j.Leader, j.Protocol)
			if j.SkipAssignment {
				line += " skip-assignment"
			}
			if len(j.Members) > 0 {
				var ms []string
				for _, m := range j.Members {
					ms = append(ms, m.MemberID)
				}
				line += " members=" + strings.Join(ms, ",")
			}
		}
		s.printf("%s", line)
	}
	if sr := r.Sync; sr != nil {
		line := fmt.Sprintf("%s: sync %s", name, gsErr(sr.Err))
		if sr.Err == nil {
			line += fmt.Sprintf(" assignment=%q", sr.Assignment)
		}
		s.printf("%s", line)
	}
}

func (s *groupScript) printGroup(id string) {
	g := s.core.groups[id]
	if g == nil {
		s.printf("%s: (none)", id)
		return
	}
	line := fmt.Sprintf("%s: %s gen=%d", id, g.state, g.generation)
	if g.protocol != "" {
		line += " protocol=" + g.protocol
	}
	if g.leader != "" {
		line += " leader=" + g.leader
	}
	var ms []string
	for _, m := range g.sortedMembers() {
		x := m.id
		if m.instanceID != "" {
			x = m.instanceID + "/" + x
		}
		if m.awaitingJoin {
			x += "(joining)"
		}
		ms = append(ms, x)
	}
	if len(ms) > 0 {
		line += " members=" + strings.Join(ms, ",")
	}
	if len(g.pendingMembers) > 0 {
		line += fmt.Sprintf(" pending=%d", len(g.pendingMembers))
	}
	if len(g.offsets) > 0 {
		var os []string
		for _, tp := range sortedTPs(g.offsets) {
			os = append(os, fmt.Sprintf("%s/%d=%d", tp.Topic, tp.Partition, g.offsets[tp].Offset))
		}
		line += " offsets=" + strings.Join(os, ",")
	}
	if len(g.pendingTxn) > 0 {
		line += fmt.Sprintf(" staged-producers=%d", len(g.pendingTxn))
	}
	s.printf("%s", line)
}
