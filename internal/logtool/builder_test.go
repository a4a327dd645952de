package logtool

import (
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/minibroker/minibroker/internal/batch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testTS = 1_700_000_000_000

// spec describes a data batch to build.
type spec struct {
	pid    int64
	epoch  int16
	seq    int32
	n      int32
	txn    bool
	ts     int64
	values []string
}

// encodeRecord encodes one record as it lies in a batch.
func encodeRecord(r kmsg.Record) []byte {
	r.Length = int32(len(r.AppendTo(nil)) - kbin.VarintLen(0))
	return r.AppendTo(nil)
}

// dataBatch builds an uncompressed data batch at offset 0.
func dataBatch(s spec) []byte {
	if s.n == 0 {
		s.n = 1
	}
	if s.ts == 0 {
		s.ts = testTS
	}
	var body []byte
	for i := int32(0); i < s.n; i++ {
		v := []byte("v")
		if int(i) < len(s.values) {
			v = []byte(s.values[i])
		}
		body = append(body, encodeRecord(kmsg.Record{OffsetDelta: i, Value: v})...)
	}
	var attrs int16
	if s.txn {
		attrs |= batch.AttrTransactional
	}
	return finishBatch(attrs, s.n, s.ts, s.pid, s.epoch, s.seq, body)
}

func finishBatch(attrs int16, n int32, ts, pid int64, epoch int16, seq int32, body []byte) []byte {
	rb := kmsg.RecordBatch{Magic: 2, Attributes: attrs, LastOffsetDelta: n - 1, FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: n, Records: body}
	rb.Length = int32(batch.HeaderSize - batch.LogOverhead + len(body))
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], batch.ComputeCRC(out))
	return out
}

// logBuilder lays batches out as a segment, assigning offsets.
type logBuilder struct {
	next int64
	data []byte
}

func (l *logBuilder) add(raw []byte) int64 {
	raw = append([]byte(nil), raw...)
	batch.SetBaseOffset(raw, l.next)
	h, err := batch.ParseHeader(raw)
	if err != nil {
		panic(err)
	}
	off := l.next
	l.next = h.LastOffset() + 1
	l.data = append(l.data, raw...)
	return off
}

func (l *logBuilder) write(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "00000000000000000000.log")
	if err := os.WriteFile(path, l.data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func marker(commit bool, pid int64, epoch int16, coordinatorEpoch int32) []byte {
	return batch.EndTxnBatch(commit, pid, epoch, coordinatorEpoch, testTS)
}

func barrier() []byte { return batch.BarrierBatch("cluster-a", testTS) }

// plain is an unrelated non-idempotent batch, standing where a barrier
// would be so that both variants of a scenario have the same offsets.
func plain() []byte { return dataBatch(spec{pid: -1, epoch: -1, seq: -1}) }

func fixCRC(raw []byte) { binary.BigEndian.PutUint32(raw[17:], batch.ComputeCRC(raw)) }

func newGzipWriter(w io.Writer) *gzip.Writer { return gzip.NewWriter(w) }
