package protocol

import (
	"context"
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// defaultQueuedMaxRequestBytes bounds, by default, the memory of request
// frames read (in part or in full) and not yet handled, across all
// connections: Kafka's queued.max.request.bytes, whose default (-1) is
// unbounded. minibroker bounds it by default: 40 connections that each
// declared a 100 MiB request and sent a part of it must not hold 4 GiB.
const defaultQueuedMaxRequestBytes = 256 << 20

// MinQueuedMaxRequestBytes is the smallest queued.max.request.bytes that
// lets a request of maxRequest bytes be read: growing a frame's buffer
// holds its old and new buffer at once, at most a quarter of the frame
// plus the frame (see frameSteps); the bound asks for half, as it did when
// buffers doubled, which also covers the pool's rounding up to a size
// class, and keeps every setting that was valid valid.
func MinQueuedMaxRequestBytes(maxRequest int32) int64 {
	return int64(maxRequest) + int64(maxRequest)/2 + frameStep
}

// errMemoryDeadlock: every byte of request memory is held by partly read
// frames whose readers all wait for more; the newest of them gives up.
var errMemoryDeadlock = errors.New("request memory exhausted by partly read requests")

// requestMemory accounts for the bytes of request frames held across
// connections (Kafka's MemoryPool). A reader reserves the bytes of a
// buffer before allocating it and releases them when the buffer is
// dropped; past the limit, it waits (reads nothing from its socket) until
// others release, as Kafka mutes channels under memory pressure. Unlike
// Kafka's SimpleMemoryPool, which hands out a request's whole declared
// size at once and may exceed its bound by one request, nothing is ever
// reserved past the limit.
type requestMemory struct {
	limit int64 // ≤ 0: unbounded
	gauge prometheus.Gauge

	mu sync.Mutex // guards the fields below
	// held is every reserved byte; waitingHeld the part held by readers
	// now waiting to grow their frame.
	held, waitingHeld int64
	freed             chan struct{}
}

func newRequestMemory(limit int64, gauge prometheus.Gauge) *requestMemory {
	return &requestMemory{limit: limit, gauge: gauge, freed: make(chan struct{})}
}

// reserve waits until n more bytes fit, then reserves them. holding is
// what the caller already holds of this frame. It returns false (and
// reserves nothing) if ctx is done or stop is closed first, and
// errMemoryDeadlock if the caller holds bytes and every byte held is
// held by readers that wait, itself included: nothing else can free
// memory, so the caller must give up what it holds.
func (m *requestMemory) reserve(ctx context.Context, stop <-chan struct{}, n, holding int64) (waited bool, err error) {
	m.mu.Lock()
	for m.limit > 0 && m.held+n > m.limit {
		if holding > 0 && m.held == m.waitingHeld+holding {
			m.mu.Unlock()
			return waited, errMemoryDeadlock
		}
		waited = true
		m.waitingHeld += holding
		freed := m.freed
		m.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			m.unwait(holding)
			return waited, ctx.Err()
		case <-stop:
			m.unwait(holding)
			return waited, context.Canceled
		}
		m.mu.Lock()
		m.waitingHeld -= holding
	}
	m.held += n
	m.gauge.Add(float64(n))
	m.mu.Unlock()
	return waited, nil
}

func (m *requestMemory) unwait(holding int64) {
	m.mu.Lock()
	m.waitingHeld -= holding
	m.mu.Unlock()
}

// release frees n reserved bytes and wakes the readers waiting.
func (m *requestMemory) release(n int64) {
	if n == 0 {
		return
	}
	m.mu.Lock()
	m.held -= n
	m.gauge.Sub(float64(n))
	close(m.freed)
	m.freed = make(chan struct{})
	m.mu.Unlock()
}

// inUse is the bytes reserved now (for tests).
func (m *requestMemory) inUse() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held
}
