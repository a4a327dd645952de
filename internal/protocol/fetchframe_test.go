package protocol

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// randomFetchResponse is a Fetch response of version v with random
// topics, partitions, aborted transactions, tagged fields and record sets
// of every size class around splitMin.
func randomFetchResponse(rng *rand.Rand, v int16, noise []byte) *kmsg.FetchResponse {
	f := kmsg.NewPtrFetchResponse()
	f.Version = v
	f.ThrottleMillis = rng.Int32N(100)
	f.SessionID = rng.Int32()
	if v >= 16 && rng.IntN(2) == 0 {
		ep := kmsg.NewFetchResponseBroker()
		ep.NodeID, ep.Host, ep.Port = 1, "127.0.0.1", 9092
		f.Brokers = append(f.Brokers, ep)
	}
	sizes := []int{-1, 0, 1, 100, splitMin - 1, splitMin, splitMin + 1}
	for t := range rng.IntN(4) + 1 {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = fmt.Sprintf("topic-%d-%s", t, bytes.Repeat([]byte{'x'}, rng.IntN(200)))
		for i := range rt.TopicID {
			rt.TopicID[i] = byte(rng.Uint32())
		}
		for p := range rng.IntN(5) + 1 {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = int32(p)
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = rng.Int64(), rng.Int64(), rng.Int64()
			for range rng.IntN(3) {
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = rng.Int64(), rng.Int64()
				rp.AbortedTransactions = append(rp.AbortedTransactions, at)
			}
			if rng.IntN(3) == 0 {
				rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = rng.Int32N(10), rng.Int64N(1000)
			}
			if rng.IntN(3) == 0 {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = 1, rng.Int32N(10)
			}
			if n := sizes[rng.IntN(len(sizes))]; n >= 0 {
				off := rng.IntN(len(noise) - n)
				rp.RecordBatches = bytes.Clone(noise[off : off+n])
				if rp.RecordBatches == nil {
					rp.RecordBatches = []byte{}
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		f.Topics = append(f.Topics, rt)
	}
	return f
}

// The pieces of a Fetch frame are, concatenated, kmsg's encoding of the
// whole response, for every version served, and the large record sets are
// pieces of their own (not copied) and are left in the response.
func TestFetchPiecesEqualKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Some record sets are sent from a file holding the noise, as the
	// broker sends record sets from segment files.
	noise, path := noiseFile(t, rng, 128<<10)
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var buf, scratch []byte
	var pieces []piece
	split, fromFiles := 0, 0
	for iter := range 60 {
		for v := int16(4); v <= 18; v++ {
			f := randomFetchResponse(rng, v, noise)
			corr := rng.Int32()
			want := appendResponse(nil, corr, f)
			var large []*byte
			var files []fileRecords
			for i, rt := range f.Topics {
				for j, rp := range rt.Partitions {
					r := rp.RecordBatches
					switch {
					case r != nil && rng.IntN(4) == 0:
						pos := bytes.Index(noise, r) // the noise is random: found where it was cut
						files = append(files, fileRecords{t: i, p: j, f: file, pos: int64(pos), n: len(r)})
						rt.Partitions[j].RecordBatches = []byte{}
					case len(r) >= splitMin:
						large = append(large, unsafe.SliceData(r))
					}
				}
			}
			shell := appendResponse(nil, corr, f)
			// Reused buffers, as the connection writer reuses them; a
			// prefix already in buf must be left alone.
			buf = append(buf[:0], "kept"...)
			pieces, buf, scratch = fetchPieces(buf, scratch, corr, f, files, pieces[:0])
			if string(buf[:4]) != "kept" {
				t.Fatalf("iteration %d v%d: the bytes before the frame changed", iter, v)
			}
			var got []byte
			for _, p := range pieces {
				if p.file != nil {
					got = append(got, noise[p.file.pos:p.file.pos+int64(p.file.n)]...)
				} else {
					got = append(got, p.b...)
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("iteration %d v%d: pieces (%d bytes in %d) differ from kmsg's encoding (%d bytes)", iter, v, len(got), len(pieces), len(want))
			}
			if again := appendResponse(nil, corr, f); !bytes.Equal(again, shell) {
				t.Fatalf("iteration %d v%d: the response was left changed", iter, v)
			}
			for _, l := range large {
				found := false
				for _, p := range pieces {
					found = found || len(p.b) >= splitMin && unsafe.SliceData(p.b) == l
				}
				if !found {
					t.Fatalf("iteration %d v%d: a large record set was copied, not written from its buffer", iter, v)
				}
			}
			for i := range files {
				found := false
				for _, p := range pieces {
					found = found || p.file == &files[i]
				}
				if !found {
					t.Fatalf("iteration %d v%d: a file's record set is not a piece", iter, v)
				}
			}
			if len(large) > 0 {
				split++
			}
			if len(files) > 0 {
				fromFiles++
			}
		}
	}
	if split < 250 || fromFiles < 250 {
		t.Fatalf("only %d responses had a large record set and %d one from a file", split, fromFiles)
	}
}

// noiseFile writes n random bytes to a file in the test's temp dir and
// returns them and the file's path.
func noiseFile(t *testing.T, rng *rand.Rand, n int) ([]byte, string) {
	t.Helper()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "noise")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b, path
}
