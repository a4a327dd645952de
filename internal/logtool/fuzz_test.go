package logtool

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/minibroker/minibroker/internal/batch"
)

// fuzzNames are the files FuzzDumpLog writes its input as: the first
// byte of the input picks one, the rest is the file. A segment of the
// same base is always present so that --deep has a log to check indexes
// and snapshots against.
var fuzzNames = []string{
	"00000000000000000000.log",
	"00000000000000000000.index",
	"00000000000000000000.timeindex",
	"00000000000000000000.txnindex",
	"00000000000000000003.snapshot",
	"leader-epoch-checkpoint",
	"log-start-offset",
	"recovery-point-offset-checkpoint",
	"partition.metadata",
}

// FuzzDumpLog: dump-log (all options, text and JSON) and verify-log on
// arbitrary bytes as any file kind never panic.
func FuzzDumpLog(f *testing.F) {
	var l logBuilder
	l.add(dataBatch(spec{pid: 1, seq: 0, n: 2, values: []string{"a", "b"}}))
	l.add(dataBatch(spec{pid: 2, seq: 0, n: 1, txn: true}))
	l.add(marker(false, 2, 0, 1))
	l.add(barrier())
	segment := l.data
	f.Add(append([]byte{0}, segment...))
	f.Add(append([]byte{0}, segment[:len(segment)-7]...)) // torn tail
	f.Add(append([]byte{0}, gzipBatch(f)...))
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 0x4c})
	f.Add([]byte{2, 0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0, 0, 0, 0, 0})
	f.Add(append([]byte{3, 0, 0}, make([]byte, 32)...))
	f.Add(append([]byte{4}, []byte("MBPS\x00\x01")...))
	f.Add(append([]byte{5}, []byte("0\n2\n0 0\n1 3\n")...))
	f.Add(append([]byte{6}, []byte("0\n3\n")...))
	f.Add(append([]byte{7}, []byte("0\n1\ngolden 0 3\n")...))
	f.Add(append([]byte{8}, []byte("version: 0\ntopic_id: sz0cWRdfQhKrhGDR9wkZmA\n")...))
	for _, g := range []string{"00000000000000000000.log", "00000000000000000000.index",
		"00000000000000000000.timeindex", "00000000000000000000.txnindex"} {
		data := unhexDump(f, filepath.Join("..", "log", "testdata", "golden", g+".hex"))
		for i, n := range fuzzNames {
			if n == g {
				f.Add(append([]byte{byte(i)}, data...))
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		dir := t.TempDir()
		name := fuzzNames[int(in[0])%len(fuzzNames)]
		if name != fuzzNames[0] {
			if err := os.WriteFile(filepath.Join(dir, fuzzNames[0]), segment, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), in[1:], 0o644); err != nil {
			t.Fatal(err)
		}
		for _, asJSON := range []bool{false, true} {
			d := NewDumper(io.Discard, Options{PrintData: true, Deep: true, JSON: asJSON, MaxDecompressedBytes: 1 << 20})
			if err := d.DumpPath(dir); err != nil {
				t.Fatalf("dump: %v", err)
			}
		}
		parts, err := GroupPaths([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		v, err := VerifyPartition(parts[0], VerifyOptions{ProducerIDExpirationMs: 1000, MaxDecompressedBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteReport(io.Discard, parts[0], v, true); err != nil {
			t.Fatal(err)
		}
	})
}

// gzipBatch is a gzip-compressed data batch.
func gzipBatch(t testing.TB) []byte {
	raw := dataBatch(spec{pid: 3, seq: 0, n: 2, values: []string{"x", "y"}})
	var z bytes.Buffer
	zw := newGzipWriter(&z)
	zw.Write(raw[batch.HeaderSize:])
	zw.Close()
	h, _ := batch.ParseHeader(raw)
	return finishBatch(int16(batch.CodecGzip), h.NumRecords, h.BaseTimestamp, h.ProducerID, h.ProducerEpoch, h.BaseSequence, z.Bytes())
}
