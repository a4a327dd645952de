package protocol

import (
	"bytes"
	"fmt"
	"math/rand/v2"
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
	noise := make([]byte, 128<<10)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	var buf, scratch []byte
	var pieces [][]byte
	split := 0
	for iter := range 60 {
		for v := int16(4); v <= 18; v++ {
			f := randomFetchResponse(rng, v, noise)
			corr := rng.Int32()
			want := appendResponse(nil, corr, f)
			var large []*byte
			for _, rt := range f.Topics {
				for _, rp := range rt.Partitions {
					if len(rp.RecordBatches) >= splitMin {
						large = append(large, unsafe.SliceData(rp.RecordBatches))
					}
				}
			}
			// Reused buffers, as the connection writer reuses them; a
			// prefix already in buf must be left alone.
			buf = append(buf[:0], "kept"...)
			pieces, buf, scratch = fetchPieces(buf, scratch, corr, f, pieces[:0])
			if string(buf[:4]) != "kept" {
				t.Fatalf("iteration %d v%d: the bytes before the frame changed", iter, v)
			}
			got := bytes.Join(pieces, nil)
			if !bytes.Equal(got, want) {
				t.Fatalf("iteration %d v%d: pieces (%d bytes in %d) differ from kmsg's encoding (%d bytes)", iter, v, len(got), len(pieces), len(want))
			}
			if again := appendResponse(nil, corr, f); !bytes.Equal(again, want) {
				t.Fatalf("iteration %d v%d: the response was left changed", iter, v)
			}
			for _, l := range large {
				found := false
				for _, p := range pieces {
					found = found || len(p) >= splitMin && unsafe.SliceData(p) == l
				}
				if !found {
					t.Fatalf("iteration %d v%d: a large record set was copied, not written from its buffer", iter, v)
				}
			}
			if len(large) > 0 {
				split++
			}
		}
	}
	if split < 300 {
		t.Fatalf("only %d responses had a large record set", split)
	}
}
