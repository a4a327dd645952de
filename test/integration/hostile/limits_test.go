package hostile

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", src, err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// apiVersionsServed reports whether an ApiVersions request on nc is
// answered.
func apiVersionsServed(t *testing.T, nc net.Conn) bool {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(itest.RequestFrame(req, 3)); err != nil {
		return false
	}
	var size [4]byte
	_, err := nc.Read(size[:])
	return err == nil
}

// The broker with max.connections.per.ip=2 and
// max.connections.per.ip.overrides=127.0.0.3:3: a third connection from
// 127.0.0.1 is closed and counted, 127.0.0.2 is served, 127.0.0.3 gets
// three, and a close frees a slot.
func TestBrokerConnectionsPerIP(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.HTTP(),
		minibrokertest.Set("max.connections.per.ip", "2"),
		minibrokertest.Set("max.connections.per.ip.overrides", "127.0.0.3:3"))
	addr := c.Addr()
	first, second := dialFrom(t, "127.0.0.1", addr), dialFrom(t, "127.0.0.1", addr)
	if !apiVersionsServed(t, first) || !apiVersionsServed(t, second) {
		t.Fatal("connections within the limit not served")
	}
	if apiVersionsServed(t, dialFrom(t, "127.0.0.1", addr)) {
		t.Fatal("third connection from 127.0.0.1 served")
	}
	if got := itest.MetricValue(t, c.HTTPAddr(), "minibroker_connections_rejected_total", ""); got != 1 {
		t.Fatalf("minibroker_connections_rejected_total %v, want 1", got)
	}
	// (Raw connections: kgo alone opens a seed connection and then one
	// per purpose — metadata, produce, fetch, group — so it needs more
	// than 2 connections per broker, on Kafka too.)
	if !apiVersionsServed(t, dialFrom(t, "127.0.0.2", addr)) {
		t.Fatal("127.0.0.2 refused while 127.0.0.1 is at its limit")
	}
	for i := range 3 {
		if !apiVersionsServed(t, dialFrom(t, "127.0.0.3", addr)) {
			t.Fatalf("127.0.0.3 connection %d refused under its override of 3", i+1)
		}
	}
	first.Close()
	itest.WaitFor(t, "the slot freed by a close", func() bool {
		nc := dialFrom(t, "127.0.0.1", addr)
		defer nc.Close()
		return apiVersionsServed(t, nc)
	})
}

// max.connections.per.ip=0 is refused without overrides, as Kafka does.
func TestBrokerNoConnectionsNeedsOverrides(t *testing.T) {
	t.Parallel()
	if _, err := minibrokertest.StartE(t, minibrokertest.Set("max.connections.per.ip", "0")); err == nil {
		t.Fatal("max.connections.per.ip=0 without overrides accepted")
	}
	c := minibrokertest.Start(t, minibrokertest.Set("max.connections.per.ip", "0"),
		minibrokertest.Set("max.connections.per.ip.overrides", "127.0.0.2:1"))
	if apiVersionsServed(t, dialFrom(t, "127.0.0.1", c.Addr())) {
		t.Fatal("127.0.0.1 served without an override")
	}
	if !apiVersionsServed(t, dialFrom(t, "127.0.0.2", c.Addr())) {
		t.Fatal("127.0.0.2 refused despite its override")
	}
}

// A Fetch asking for more than fetch.max.bytes gets at most that (plus
// the first batch, always returned whole), as Kafka lowers MaxBytes.
func TestFetchMaxBytesCapsTheResponse(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("capped", 1), minibrokertest.Set("fetch.max.bytes", "1048576"))
	cl := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("capped"), kgo.ProducerBatchMaxBytes(256<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	value := make([]byte, 64<<10)
	for range 64 { // 4 MiB in batches of at most 256 KiB
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("capped")}}
	mdResp, err := md.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest() // kgo sends it at the broker's highest version
	req.MaxBytes, req.SessionEpoch, req.ReplicaID = 100<<20, -1, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "capped", mdResp.Topics[0].TopicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 100 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("fetch error %d", code)
	}
	got := len(resp.Topics[0].Partitions[0].RecordBatches)
	t.Logf("Fetch MaxBytes 100 MiB with fetch.max.bytes=1 MiB over 4 MiB of records: %d bytes", got)
	if got == 0 || got > 1<<20+256<<10 {
		t.Fatalf("%d record bytes returned, want ≤ 1 MiB (+ one batch)", got)
	}
}

// fetchAll is a Fetch v11 frame for topic/0 from offset 0 asking for
// maxBytes.
func fetchAll(topic string, maxBytes, corr int32) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxBytes, req.SessionEpoch, req.ReplicaID = 11, maxBytes, -1, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = maxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return itest.RequestFrame(req, corr)
}

// TestSlowReadersBinary runs the built binary against clients that never
// read their responses — four connections each pipelining eight Fetches
// of 50 MiB over a 32 MiB partition, two pipelining thousands of Metadata
// requests — while a well-behaved kgo client produces and consumes. The
// good client is served throughout; peak RSS stays within what one
// response per stuck connection explains (4 × 32 MiB, where eight per
// connection would be 1 GiB); the stuck connections are closed once their
// writes make no progress for connections.max.idle.ms. Not parallel: its
// memory is its own.
func TestSlowReadersBinary(t *testing.T) {
	const (
		stuckFetchers  = 4
		pipelined      = 8
		backlog        = 32 << 20
		idle           = 15 * time.Second
		rssLimitKiB    = 640 << 10
		metadataFloods = 2
	)
	p := itest.StartBinary(t, t.TempDir(), "--set", "num.partitions=1",
		"--set", "connections.max.idle.ms="+strconv.Itoa(int(idle/time.Millisecond)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The backlog: 32 MiB in one partition.
	prod := itest.NewClient(t, p.Addr, kgo.DefaultProduceTopic("big"), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 100<<10)
	for range backlog / len(value) {
		prod.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rssBefore := itest.PeakRSSKiB(t, p.Cmd.Process.Pid)

	// The well-behaved client: produce one, consume it, repeat.
	var rounds, failures atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		good := itest.NewClient(t, p.Addr, kgo.DefaultProduceTopic("good"), kgo.AllowAutoTopicCreation(),
			kgo.ConsumeTopics("good"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		for ctx.Err() == nil {
			rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
			err := good.ProduceSync(rctx, &kgo.Record{Value: []byte("ok")}).FirstErr()
			if err == nil {
				fs := good.PollFetches(rctx)
				if fs.NumRecords() == 0 {
					err = fs.Err0()
					if err == nil {
						err = rctx.Err()
					}
				}
			}
			rcancel()
			switch {
			case err == nil:
				rounds.Add(1)
			case ctx.Err() == nil:
				failures.Add(1)
				t.Logf("good client: %v", err)
			}
		}
	}()

	// The slow readers: small receive buffers, all requests in one write.
	var stuck []net.Conn
	for range stuckFetchers {
		nc := dialFrom(t, "127.0.0.1", p.Addr)
		nc.(*net.TCPConn).SetReadBuffer(16 << 10)
		var frames []byte
		for i := range pipelined {
			frames = append(frames, fetchAll("big", 50<<20, int32(i))...)
		}
		if _, err := nc.Write(frames); err != nil {
			t.Fatal(err)
		}
		stuck = append(stuck, nc)
	}
	for range metadataFloods {
		nc := dialFrom(t, "127.0.0.1", p.Addr)
		nc.(*net.TCPConn).SetReadBuffer(16 << 10)
		stuck = append(stuck, nc)
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 12
		frame := itest.RequestFrame(md, 1)
		wg.Add(1)
		go func() { // writes until the broker stops reading, then until it closes
			defer wg.Done()
			var frames []byte
			for range 1000 {
				frames = append(frames, frame...)
			}
			// No write deadline: a write cut short would leave half a
			// frame in the stream. It blocks once the broker stops
			// reading and fails once the broker closes the connection.
			for ctx.Err() == nil {
				if _, err := nc.Write(frames); err != nil {
					return
				}
			}
		}()
	}

	// Every slow reader's connection is closed by the write timeout.
	// Closed by the write timeout, or (seen once in many runs, a flooding
	// connection whose last frame the broker had started reading) as
	// half-open by the read side of the same timeout: nothing else in
	// this test closes a connection on error.
	closed := func() float64 {
		return itest.MetricValue(t, p.HttpAddr, "minibroker_connections_closed_on_error_total", "")
	}
	deadline := time.Now().Add(2 * time.Minute)
	for closed() < stuckFetchers+metadataFloods {
		if time.Now().After(deadline) {
			for _, line := range strings.Split(itest.HttpGet(t, "http://"+p.HttpAddr+"/metrics"), "\n") {
				if strings.HasPrefix(line, "minibroker_connections") || strings.HasPrefix(line, "minibroker_request_queue") {
					t.Log(line)
				}
			}
			t.Fatalf("%v of %d slow readers' connections closed", closed(), stuckFetchers+metadataFloods)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rss := itest.PeakRSSKiB(t, p.Cmd.Process.Pid)
	for _, nc := range stuck {
		nc.Close()
	}
	// A few more good rounds after the closes.
	after := rounds.Load()
	itest.WaitFor(t, "the good client after the closes", func() bool { return rounds.Load() >= after+3 })
	cancel()
	wg.Wait()
	heap := itest.MetricValue(t, p.HttpAddr, "go_memstats_heap_inuse_bytes", "")
	t.Logf("good client: %d produce+consume rounds, %d failures; peak RSS %d MiB (%d MiB before the slow readers); heap in use after the closes %d MiB",
		rounds.Load(), failures.Load(), rss>>10, rssBefore>>10, int64(heap)>>20)
	if failures.Load() > 0 || rounds.Load() < 5 {
		t.Fatalf("good client: %d rounds, %d failures", rounds.Load(), failures.Load())
	}
	if rss > rssLimitKiB {
		t.Fatalf("peak RSS %d MiB > %d MiB", rss>>10, rssLimitKiB>>10)
	}
	if err := p.Stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("broker did not shut down cleanly: %v", err)
	}
}
