package clients

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/minibrokertest"
)

// Helpers shared by the compat matrix's client files (compat_*_test.go)
// and by the tests that reuse a client's steps (sasl_v0, clientversions,
// mirror_failover_groups). The matrix's own rows, cells and table are in
// compat_matrix_test.go. The rule each test proves is mapped in doc.go.
//
// The rows every client runs the same way: the drivers below create the
// topics, call the client through a few small functions and check the
// result against the broker's log and what the client reads back.

// compatValue is the i-th value with prefix: about 1.1 KiB that compresses
// well (librdkafka sends a batch uncompressed when compression does not
// shrink it), starting with a short readable name.
func compatValue(prefix string, i int) string {
	return fmt.Sprintf("%s-%03d|%s", prefix, i, strings.Repeat("minibroker ", 100))
}

func compatValues(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = compatValue(prefix, i)
	}
	return out
}

// short is a value's readable name, for messages.
func short(v string) string {
	name, _, _ := strings.Cut(v, "|")
	return name
}

func shorts(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = short(v)
	}
	return out
}

// storedCheck says what the stored batches must carry.
type storedCheck struct {
	codec    int8 // batch.Codec*
	producer int  // 1: producer id and sequences; -1: no producer id; 0: either
}

// checkStored compares a partition with want (offsets 0…, exact values,
// read back with kgo) and checks the batch headers. A codec other than
// the one asked for is a quirk, described in the result; anything else
// wrong fails the test.
func checkStored(t *testing.T, c *minibrokertest.Cluster, topic string, want []string, sc storedCheck) (quirk string) {
	t.Helper()
	itest.WaitLogEnd(t, c, topic, 0, int64(len(want)))
	got := itest.KgoReadPartition(t, c.Addr(), topic, 0, len(want), false)
	for i, r := range got {
		if i >= len(want) || r.Offset != int64(i) || string(r.Value) != want[i] {
			t.Fatalf("%s record %d: %s at offset %d, want %s at %d", topic, i, short(string(r.Value)), r.Offset, short(want[min(i, len(want)-1)]), i)
		}
	}
	if hw := itest.LogEnd(c, topic, 0); hw != int64(len(want)) {
		t.Fatalf("%s holds %d offsets, want %d", topic, hw, len(want))
	}
	hs, _ := itest.BatchesOf(t, c, topic, 0, 0, int64(len(want)))
	codecs := map[int8]int{}
	nextSeq := int32(0)
	var pid int64 = -2
	for _, h := range hs {
		codecs[h.Codec()]++
		switch {
		case sc.producer < 0 && h.HasProducer():
			t.Fatalf("%s batch at %d: producer id %d, want none", topic, h.BaseOffset, h.ProducerID)
		case sc.producer > 0 && !h.HasProducer():
			t.Fatalf("%s batch at %d: no producer id, want an idempotent batch", topic, h.BaseOffset)
		case sc.producer > 0:
			if pid != -2 && h.ProducerID != pid {
				t.Fatalf("%s batch at %d: producer id %d, earlier %d", topic, h.BaseOffset, h.ProducerID, pid)
			}
			pid = h.ProducerID
			if h.BaseSequence != nextSeq {
				t.Fatalf("%s batch at %d: base sequence %d, want %d", topic, h.BaseOffset, h.BaseSequence, nextSeq)
			}
			nextSeq += h.NumRecords
		}
	}
	if len(codecs) == 1 && codecs[sc.codec] > 0 {
		return ""
	}
	var seen []string
	for _, codec := range []int8{batch.CodecNone, batch.CodecGzip, batch.CodecSnappy, batch.CodecLZ4, batch.CodecZstd} {
		if codecs[codec] > 0 {
			seen = append(seen, codecName(codec))
		}
	}
	return fmt.Sprintf("The stored batches carry %s, not the codec asked for.", strings.Join(seen, " and "))
}

func codecName(c int8) string {
	return map[int8]string{batch.CodecNone: "no compression", batch.CodecGzip: "gzip", batch.CodecSnappy: "snappy",
		batch.CodecLZ4: "lz4", batch.CodecZstd: "zstd"}[c]
}

// produceSpec is how a produce row asks a client to produce.
type produceSpec struct {
	acks       string // "0", "1", "all"
	codec      int8   // batch.Codec*
	idempotent bool
}

// compatProduceRows runs the produce rows: produce writes values to
// partition 0 of a one-partition topic; readBack reads n values from the
// start with the client's own consumer (acks=all row).
func compatProduceRows(t *testing.T, m *compatMatrix, client string, c *minibrokertest.Cluster, lacks map[compatRow]string,
	produce func(t *testing.T, topic string, values []string, spec produceSpec) (quirk string),
	readBack func(t *testing.T, topic string, n int) []itest.CompatRecord) {
	const n = 20
	for _, tc := range []struct {
		row  compatRow
		spec produceSpec
		sc   storedCheck
	}{
		{rowAcks0, produceSpec{acks: "0"}, storedCheck{producer: -1}},
		{rowAcks1, produceSpec{acks: "1"}, storedCheck{producer: -1}},
		{rowAcksAll, produceSpec{acks: "all"}, storedCheck{}},
		{rowGzip, produceSpec{acks: "all", codec: batch.CodecGzip}, storedCheck{codec: batch.CodecGzip}},
		{rowSnappy, produceSpec{acks: "all", codec: batch.CodecSnappy}, storedCheck{codec: batch.CodecSnappy}},
		{rowLz4, produceSpec{acks: "all", codec: batch.CodecLZ4}, storedCheck{codec: batch.CodecLZ4}},
		{rowZstd, produceSpec{acks: "all", codec: batch.CodecZstd}, storedCheck{codec: batch.CodecZstd}},
		{rowIdempotent, produceSpec{acks: "all", idempotent: true}, storedCheck{producer: 1}},
	} {
		if reason, ok := lacks[tc.row]; ok {
			m.lacks(t, client, tc.row, reason)
			continue
		}
		m.cell(t, client, tc.row, func(t *testing.T) string {
			topic := "p-" + strings.ReplaceAll(tc.row.id, "=", "")
			itest.CreateCompatTopic(t, c, topic, 1)
			want := compatValues(topic, n)
			quirk := produce(t, topic, want, tc.spec)
			if q := checkStored(t, c, topic, want, tc.sc); q != "" {
				quirk = strings.TrimSpace(q + " " + quirk)
			}
			if tc.row == rowAcksAll {
				got := readBack(t, topic, n)
				for i, r := range got {
					if r.Offset != int64(i) || r.Value != want[i] {
						t.Fatalf("%s read back %d: %s at %d, want %s at %d", client, i, short(r.Value), r.Offset, short(want[i]), i)
					}
				}
				if len(got) != n {
					t.Fatalf("%s read back %d records, want %d", client, len(got), n)
				}
			}
			return quirk
		})
	}
}

// compatTxnRow: three transactions by the client on one partition —
// committed, aborted, committed — read back by the client with
// read_committed (the committed records at their offsets, the markers
// leaving gaps) and read_uncommitted (all six).
func compatTxnRow(t *testing.T, m *compatMatrix, client string, c *minibrokertest.Cluster,
	txn func(t *testing.T, topic string, commit bool, values []string),
	read func(t *testing.T, topic string, committed bool, n int) []itest.CompatRecord) {
	m.cell(t, client, rowTxn, func(t *testing.T) string {
		const topic = "txn"
		itest.CreateCompatTopic(t, c, topic, 1)
		a, x, b := compatValues("committed-a", 2), compatValues("aborted", 2), compatValues("committed-b", 2)
		txn(t, topic, true, a)
		txn(t, topic, false, x)
		txn(t, topic, true, b)
		// a@0,1 COMMIT@2 x@3,4 ABORT@5 b@6,7 COMMIT@8
		itest.WaitFor(t, "last stable offset 9", func() bool {
			p, _ := c.Broker().Partition(topic, 0)
			return p.Offsets().LastStable == 9
		})
		checkRecords(t, client+" read_committed", read(t, topic, true, 4), itest.Concat(a, b), []int64{0, 1, 6, 7})
		checkRecords(t, client+" read_uncommitted", read(t, topic, false, 6), itest.Concat(a, x, b), []int64{0, 1, 3, 4, 6, 7})
		return ""
	})
}

// compatTxnV2Row runs three transactions (commit, abort, commit) through
// txn, whose producer keeps one session of transactional id id, on c,
// which finalizes transaction.version 2. The producer epoch
// DescribeTransactions shows after the first commit and after the third
// tells which protocol the client used: a bump per EndTxn (v5,
// transaction version 2) or none (v0–v4, the older protocol, which
// minibroker still serves). read_committed must see both commits either
// way. A client that uses version 2 passes; one that does not "lacks",
// with reason, and the missing bump is what shows it.
func compatTxnV2Row(t *testing.T, m *compatMatrix, client string, c *minibrokertest.Cluster, id string,
	txn func(t *testing.T, topic string, commit bool, values []string),
	read func(t *testing.T, topic string, committed bool, n int) []itest.CompatRecord, usesTV2 bool, reason string) {
	run := func(t *testing.T) (first, last int16) {
		t.Helper()
		const topic = "txn-v2"
		itest.CreateCompatTopic(t, c, topic, 1)
		a, x, b := compatValues("v2-committed-a", 2), compatValues("v2-aborted", 2), compatValues("v2-committed-b", 2)
		txn(t, topic, true, a)
		first = itest.TxnEpoch(t, c.Addr(), id)
		txn(t, topic, false, x)
		txn(t, topic, true, b)
		last = itest.TxnEpoch(t, c.Addr(), id)
		itest.WaitFor(t, "last stable offset 9", func() bool {
			p, _ := c.Broker().Partition(topic, 0)
			return p.Offsets().LastStable == 9
		})
		checkRecords(t, client+" read_committed", read(t, topic, true, 4), itest.Concat(a, b), []int64{0, 1, 6, 7})
		return first, last
	}
	if usesTV2 {
		m.cell(t, client, rowTxnV2, func(t *testing.T) string {
			if first, last := run(t); last != first+2 {
				t.Fatalf("producer epoch %d after the first commit, %d two transactions later: want a bump per EndTxn", first, last)
			}
			return ""
		})
		return
	}
	m.lacksVerified(t, client, rowTxnV2, func(t *testing.T) string {
		if first, last := run(t); last != first {
			t.Fatalf("producer epoch %d after the first commit, %d two transactions later: want none (the older protocol)", first, last)
		}
		return reason
	})
}

// checkRecords fails unless got holds exactly the values at the offsets.
func checkRecords(t *testing.T, who string, got []itest.CompatRecord, values []string, offsets []int64) {
	t.Helper()
	var g, w []string
	for _, r := range got {
		g = append(g, fmt.Sprintf("%s@%d", short(r.Value), r.Offset))
	}
	for i, v := range values {
		w = append(w, fmt.Sprintf("%s@%d", short(v), offsets[i]))
	}
	if !slices.Equal(g, w) || !slices.Equal(itest.RecordValues(got), values) {
		t.Fatalf("%s: got %v, want %v", who, g, w)
	}
}

// barrierPartition builds, on c, partition ctl-0 holding transaction
// markers and a MIRROR_PID_RESET barrier, the way a failover leaves it: a
// source broker gets kgo transactions (one committed, one aborted) and a
// plain record, c mirrors it and fails over (writing the barrier), then a
// kgo transaction and a plain record are written on c.
//
//	0 t-0  1 t-1  2 COMMIT  3 x-0  4 ABORT  5 p-0  6 MIRROR_PID_RESET
//	7 u-0  8 COMMIT  9 p-1
//
// It returns the values in offset order, by name.
func barrierPartition(t *testing.T, c *minibrokertest.Cluster) (sourceClusterID string, vals map[string]string) {
	t.Helper()
	const topic = "ctl"
	src := minibrokertest.Start(t, minibrokertest.Topic(topic, 1))
	vals = map[string]string{}
	for _, name := range []string{"t-0", "t-1", "x-0", "p-0", "u-0", "p-1"} {
		vals[name] = compatValue(name, 0)
	}
	txn := itest.MirrorTxnProducer(t, src.Addr(), "ctl-writer")
	itest.MirrorTxn(t, txn, topic, 0, []string{vals["t-0"], vals["t-1"]}, true)
	itest.MirrorTxn(t, txn, topic, 0, []string{vals["x-0"]}, false)
	plain := itest.IdempotentProducer(t, src.Addr())
	if err := plain.ProduceSync(itest.CompatCtx(t), &kgo.Record{Topic: topic, Value: []byte(vals["p-0"])}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	mr := c.Mirror("ctl-from-src", src.Addr()).Start(topic)
	mr.WaitCaughtUp(itest.Timeout)
	mr.Stop()
	if got := itest.Barriers(t, c, topic, 0); !slices.Equal(got, []int64{6}) {
		t.Fatalf("barriers at %v, want [6]", got)
	}
	txn2 := itest.MirrorTxnProducer(t, c.Addr(), "ctl-writer-2")
	itest.MirrorTxn(t, txn2, topic, 0, []string{vals["u-0"]}, true)
	plain2 := itest.IdempotentProducer(t, c.Addr())
	if err := plain2.ProduceSync(itest.CompatCtx(t), &kgo.Record{Topic: topic, Value: []byte(vals["p-1"])}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	itest.WaitFor(t, "ctl-0 stable at 10", func() bool {
		p, _ := c.Broker().Partition(topic, 0)
		return p.Offsets().LastStable == 10
	})
	// Everything is where the diagram says.
	hs, bs := itest.BatchesOf(t, c, topic, 0, 0, 10)
	var layout []string
	for i, h := range hs {
		if h.IsControl() {
			cr, err := batch.ReadControl(bs[i])
			if err != nil {
				t.Fatal(err)
			}
			layout = append(layout, fmt.Sprintf("%d:%s", h.BaseOffset, cr.Type))
			continue
		}
		layout = append(layout, fmt.Sprintf("%d-%d:data", h.BaseOffset, h.LastOffset()))
	}
	t.Logf("ctl-0 batches: %v", layout)
	return src.ClusterID(), vals
}

// compatControlRow reads the barrier partition with the client, read_committed
// and read_uncommitted: a client that skips control batches hands out the
// data records only, at their offsets.
func compatControlRow(t *testing.T, m *compatMatrix, client string, c *minibrokertest.Cluster,
	read func(t *testing.T, topic string, committed bool, n int) []itest.CompatRecord) {
	m.cell(t, client, rowControl, func(t *testing.T) string {
		_, v := barrierPartition(t, c)
		checkRecords(t, client+" read_committed", read(t, "ctl", true, 5),
			[]string{v["t-0"], v["t-1"], v["p-0"], v["u-0"], v["p-1"]}, []int64{0, 1, 5, 7, 9})
		checkRecords(t, client+" read_uncommitted", read(t, "ctl", false, 6),
			[]string{v["t-0"], v["t-1"], v["x-0"], v["p-0"], v["u-0"], v["p-1"]}, []int64{0, 1, 3, 5, 7, 9})
		return ""
	})
}

// listOffsetsFixture: partition 0 of topic holds ten records
// stamped base+0s … base+9s, one batch each, and DeleteRecords moved its
// log start to 2. Earliest is 2, latest 10, and base+4.5s finds offset 5.
func listOffsetsFixture(t *testing.T, c *minibrokertest.Cluster, topic string) (base time.Time) {
	t.Helper()
	itest.CreateCompatTopic(t, c, topic, 1)
	base = time.Now().Add(-time.Hour).Truncate(time.Second)
	cl := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic(topic))
	for i := range 10 {
		r := &kgo.Record{Timestamp: base.Add(time.Duration(i) * time.Second), Value: []byte(fmt.Sprint(i))}
		if err := cl.ProduceSync(itest.CompatCtx(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	del := make(kadm.Offsets)
	del.Add(kadm.Offset{Topic: topic, Partition: 0, At: 2})
	if dr, err := kadm.NewClient(cl).DeleteRecords(itest.CompatCtx(t), del); err != nil || dr[topic][0].Err != nil {
		t.Fatalf("delete records: %v %v", err, dr)
	}
	return base
}

// adminOps are a client's admin calls; a nil one is a capability the
// client lacks, explained in lacks.
type adminOps struct {
	create   func(t *testing.T, topic string, parts int32, configs map[string]string)
	delete   func(t *testing.T, topic string)
	describe func(t *testing.T, topic string) map[string]string // config name → value
	listEnds func(t *testing.T, topic string) (earliest, latest int64)
	listTime func(t *testing.T, topic string, ts time.Time) int64
	lacks    map[compatRow]string
}

// compatAdminRows runs the admin and list-offsets rows; results are
// checked against the broker and with kadm.
func compatAdminRows(t *testing.T, m *compatMatrix, client string, c *minibrokertest.Cluster, ops adminOps) {
	run := func(row compatRow, available bool, f func(t *testing.T)) {
		if !available {
			m.lacks(t, client, row, ops.lacks[row])
			return
		}
		m.cell(t, client, row, func(t *testing.T) string { f(t); return "" })
	}
	run(rowCreate, ops.create != nil, func(t *testing.T) {
		ops.create(t, "adm-create", 3, map[string]string{"retention.ms": "3600000"})
		tp, ok := c.Broker().Topic("adm-create")
		if !ok || len(tp.Partitions) != 3 {
			t.Fatalf("adm-create: exists %v, want 3 partitions", ok)
		}
		if got := itest.KadmTopicConfig(t, c, "adm-create", "retention.ms"); got != "3600000" {
			t.Fatalf("adm-create retention.ms %q, want 3600000", got)
		}
	})
	run(rowDelete, ops.delete != nil, func(t *testing.T) {
		itest.CreateCompatTopic(t, c, "adm-delete", 2)
		cl := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("adm-delete"))
		if err := cl.ProduceSync(itest.CompatCtx(t), &kgo.Record{Value: []byte("doomed")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		ops.delete(t, "adm-delete")
		if _, ok := c.Broker().Topic("adm-delete"); ok {
			t.Fatal("adm-delete still exists")
		}
		if md := itest.KadmMetadata(t, c.Addr(), "adm-delete"); md.Topics["adm-delete"].Err == nil {
			t.Fatal("metadata still lists adm-delete")
		}
	})
	run(rowConfigs, ops.describe != nil, func(t *testing.T) {
		resp, err := itest.KadmClient(t, c.Addr()).CreateTopics(itest.CompatCtx(t), 1, 1,
			map[string]*string{"retention.ms": kadm.StringPtr("3600000")}, "adm-configs")
		if err != nil || resp["adm-configs"].Err != nil {
			t.Fatalf("create adm-configs: %v %v", err, resp)
		}
		got := ops.describe(t, "adm-configs")
		for k, want := range map[string]string{"retention.ms": "3600000", "segment.bytes": "1073741824", "cleanup.policy": "delete"} {
			if got[k] != want {
				t.Fatalf("%s = %q, want %q (of %d configs)", k, got[k], want, len(got))
			}
		}
	})
	run(rowListEnds, ops.listEnds != nil, func(t *testing.T) {
		listOffsetsFixture(t, c, "times-ends")
		if first, last := ops.listEnds(t, "times-ends"); first != 2 || last != 10 {
			t.Fatalf("earliest %d latest %d, want 2 and 10", first, last)
		}
	})
	run(rowListTime, ops.listTime != nil, func(t *testing.T) {
		base := listOffsetsFixture(t, c, "times-ts")
		for _, tc := range []struct {
			at   time.Duration
			want int64
		}{{4500 * time.Millisecond, 5}, {9 * time.Second, 9}, {0, 2}} {
			if got := ops.listTime(t, "times-ts", base.Add(tc.at)); got != tc.want {
				t.Fatalf("offset at base+%v: %d, want %d", tc.at, got, tc.want)
			}
		}
	})
}

func newConfluentProducer(t *testing.T, addr string, extra kafka.ConfigMap) *kafka.Producer {
	t.Helper()
	cfg := kafka.ConfigMap{"bootstrap.servers": addr, "linger.ms": 0}
	for k, v := range extra {
		cfg[k] = v
	}
	p, err := kafka.NewProducer(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// confluentSend produces values to partition 0 and waits for every
// delivery report; it returns the offsets reported.
func confluentSend(t *testing.T, p *kafka.Producer, topic string, values []string) []int64 {
	t.Helper()
	reports := make(chan kafka.Event, len(values))
	for _, v := range values {
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte(v)}, reports); err != nil {
			t.Fatal(err)
		}
	}
	var offsets []int64
	for range values {
		select {
		case ev := <-reports:
			msg := ev.(*kafka.Message)
			if msg.TopicPartition.Error != nil {
				t.Fatalf("delivery: %v", msg.TopicPartition.Error)
			}
			offsets = append(offsets, int64(msg.TopicPartition.Offset))
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d deliveries", len(offsets), len(values))
		}
	}
	return offsets
}

// moduleVersion is the version of a module this test binary was built
// with. Test binaries carry no dependency list in their build info
// (runtime/debug.ReadBuildInfo returns no Deps under go test), so the
// version comes from go.mod, which names every direct dependency at the
// version the build selects.
func moduleVersion(t *testing.T, path string) string {
	t.Helper()
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == path {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	gomod, err := os.ReadFile(filepath.Join("..", "..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == path {
			return f[1]
		}
	}
	t.Fatalf("module %s is in neither the build info nor go.mod", path)
	return ""
}
