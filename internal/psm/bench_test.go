package psm

import "testing"

// BenchmarkPrepareKnownProducer is CLIENT validation and application of one
// batch of a producer the manager knows, among 1000 producers.
func BenchmarkPrepareKnownProducer(b *testing.B) {
	m := NewManager(Config{}, nil, nil)
	for pid := int64(0); pid < 1000; pid++ {
		apply(b, m, OriginClient, dataBatch(pid, 0, 0, 10, pid*10, false))
	}
	batches := []PreparedBatch{dataBatch(500, 0, 10, 10, 10_000, false)}
	h := &batches[0].Header
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := m.Prepare(OriginClient, batches, testTS)
		if err != nil {
			b.Fatal(err)
		}
		p.Apply()
		h.BaseSequence += 10
		h.BaseOffset += 10
		if h.BaseSequence > 1<<30 { // stay clear of wraparound
			b.StopTimer()
			m.Clear()
			h.BaseSequence = 0
			b.StartTimer()
		}
	}
}

// BenchmarkReplayReplication is the recovery replay path: REPLICATION
// appends of one batch each, for a known producer.
func BenchmarkReplayReplication(b *testing.B) {
	m := NewManager(Config{}, nil, nil)
	batches := []PreparedBatch{dataBatch(7, 0, 0, 10, 0, false)}
	h := &batches[0].Header
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, _ := m.Prepare(OriginReplication, batches, testTS)
		p.Apply()
		h.BaseSequence = (h.BaseSequence + 10) % (1 << 30)
		h.BaseOffset += 10
	}
}
