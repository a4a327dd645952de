package partition

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/psm"
)

func benchPartition(b *testing.B) *Partition {
	cfg := Config{Log: mlog.DefaultConfig(), PSM: psm.Config{}, MessageMaxBytes: 1 << 20}
	p, err := Open(b.TempDir(), "t", 0, cfg, Options{Now: time.Now})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// BenchmarkAppendAsLeader is produce validation (framing, CRC-32C, record
// count), offset assignment, the producer-state check and the log append
// of one batch of n records. Allocations must not grow with n.
func BenchmarkAppendAsLeader(b *testing.B) {
	for _, idempotent := range []bool{false, true} {
		for _, n := range []int{1, 100, 5000} {
			b.Run(fmt.Sprintf("idempotent=%v/records=%d", idempotent, n), func(b *testing.B) {
				p := benchPartition(b)
				pid, epoch := int64(-1), int16(-1)
				if idempotent {
					pid, epoch = 7, 0
				}
				seq := int32(0)
				raw := encode(pid, epoch, seq, n, false)
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				for b.Loop() {
					if idempotent { // next sequence, CRC redone, off the clock
						b.StopTimer()
						binary.BigEndian.PutUint32(raw[53:], uint32(seq))
						binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
						seq += int32(n)
						b.StartTimer()
					}
					if _, err := p.AppendAsLeader(raw); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkRead reads up to maxBytes from offset 0 of a warm partition.
func BenchmarkRead(b *testing.B) {
	for _, maxBytes := range []int{16 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("bytes=%d", maxBytes), func(b *testing.B) {
			p := benchPartition(b)
			raw := encode(-1, -1, -1, 1000, false)
			for range (8 << 20) / len(raw) {
				if _, err := p.AppendAsLeader(raw); err != nil {
					b.Fatal(err)
				}
			}
			var n int
			b.ReportAllocs()
			for b.Loop() {
				res, err := p.Read(0, maxBytes, true, false)
				if err != nil {
					b.Fatal(err)
				}
				n = len(res.Records)
			}
			b.SetBytes(int64(n))
		})
	}
}
