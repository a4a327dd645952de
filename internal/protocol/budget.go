package protocol

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// defaultPipelineBytes is how many bytes of requests read but not yet
// handled, plus responses not yet written, one connection may hold before
// its reader stops reading further requests.
//
// Kafka mutes a connection after reading one request and unmutes it once
// the response is sent, so a connection holds at most one request and one
// response. minibroker keeps pipelining (kgo and librdkafka send several
// requests before reading), but only while what the connection holds stays
// under this budget: small Produce, Metadata and heartbeat requests are
// read ahead, a large request or one whose response may be large (a Fetch
// with MaxBytes above the budget) is read alone, as Kafka does. A
// connection therefore holds at most the budget plus one request (up to
// socket.request.max.bytes) plus one response, however many requests the
// client pipelines and whether or not it reads its responses.
const defaultPipelineBytes = 1 << 20

// pipelineBudget accounts for one connection's requests in flight: how
// many there are (at most depth) and the bytes they hold (at most limit,
// except that one request is always admitted when nothing else is held).
type pipelineBudget struct {
	depth int
	limit int64 // ≤ 0: bytes are not bounded (the negative-control seam)

	mu       sync.Mutex // guards the fields below
	requests int        // read, response not yet written
	bytes    int64      // reserved by those requests
	freed    chan struct{}
}

func newPipelineBudget(depth int, limit int64) *pipelineBudget {
	return &pipelineBudget{depth: depth, limit: limit, freed: make(chan struct{})}
}

// admit waits until one more request of n bytes fits, then reserves it.
// It returns false if ctx is done or stop is closed first.
func (b *pipelineBudget) admit(ctx context.Context, stop <-chan struct{}, n int64) bool {
	for {
		b.mu.Lock()
		fits := b.requests == 0 ||
			(b.requests < b.depth && (b.limit <= 0 || b.bytes+n <= b.limit))
		if fits {
			b.requests++
			b.bytes += n
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		}
	}
}

// grow adds n bytes to an admitted request's reservation without waiting
// (what it holds has become known); negative n shrinks it.
func (b *pipelineBudget) grow(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.bytes += n
	b.wakeLocked(n < 0)
	b.mu.Unlock()
}

// done ends a request whose response is written (or dropped), freeing
// the n bytes it still holds.
func (b *pipelineBudget) done(n int64) {
	b.mu.Lock()
	b.requests--
	b.bytes -= n
	b.wakeLocked(true)
	b.mu.Unlock()
}

func (b *pipelineBudget) wakeLocked(freed bool) {
	if freed {
		close(b.freed)
		b.freed = make(chan struct{})
	}
}

// held reports the requests and bytes held (for tests).
func (b *pipelineBudget) held() (int, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests, b.bytes
}

// responseEstimate is what a request's response may hold before it is
// handled: a Fetch's MaxBytes (or its partitions' limits, if smaller);
// other responses are small and bounded by the pipeline depth.
func responseEstimate(req kmsg.Request) int64 {
	f, ok := req.(*kmsg.FetchRequest)
	if !ok {
		return 0
	}
	var partitions int64
	for i := range f.Topics {
		for j := range f.Topics[i].Partitions {
			partitions += int64(max(f.Topics[i].Partitions[j].PartitionMaxBytes, 0))
		}
	}
	if f.MaxBytes > 0 {
		return min(int64(f.MaxBytes), partitions)
	}
	return partitions
}

// responseSize is the encoded size a handled response is accounted at:
// a Fetch response's record bytes and framing (fetchResponseSize), 0 for
// the rest.
func responseSize(resp kmsg.Response) int64 {
	if f, ok := resp.(*kmsg.FetchResponse); ok {
		return int64(fetchResponseSize(f))
	}
	return 0
}

// fetchResponseSize bounds the encoded size of a Fetch response: mostly
// its record bytes.
func fetchResponseSize(f *kmsg.FetchResponse) int {
	need := 64
	for i := range f.Topics {
		t := &f.Topics[i]
		need += 64 + len(t.Topic) + len(t.Partitions)*64
		for j := range t.Partitions {
			need += len(t.Partitions[j].RecordBatches) + 16*len(t.Partitions[j].AbortedTransactions)
		}
	}
	return need
}
