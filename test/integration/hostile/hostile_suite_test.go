package hostile

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestHostileClientSuite runs the built binary against hostile clients —
// 10,000 connections opened and dropped, 1 GiB size prefixes, byte-at-a-time
// requests, every API key 0..100 at versions -1..20 with garbage bodies —
// while a well-behaved kgo client produces throughout. The broker never
// dies, the good client is served, and peak RSS stays bounded. Not
// parallel: it runs alone so its load is its own.
func TestHostileClientSuite(t *testing.T) {
	p := itest.StartBinary(t, t.TempDir(), "--set", "num.partitions=1")
	addr := p.Addr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The well-behaved client.
	good := itest.NewClient(t, addr, kgo.DefaultProduceTopic("good"), kgo.AllowAutoTopicCreation())
	var served, failed atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			err := good.ProduceSync(rctx, &kgo.Record{Value: []byte("ok")}).FirstErr()
			rcancel()
			if err == nil {
				served.Add(1)
			} else if ctx.Err() == nil {
				failed.Add(1)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	dial := func() net.Conn {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Errorf("dial: %v", err)
			return nil
		}
		return nc
	}
	// 10,000 connections opened and dropped, 8 at a time.
	var conns sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := 0; i < 10000; i++ {
		conns.Add(1)
		sem <- struct{}{}
		go func() {
			defer conns.Done()
			defer func() { <-sem }()
			if nc := dial(); nc != nil {
				if i%2 == 0 {
					nc.Write([]byte{0, 0})
				}
				nc.Close()
			}
		}()
	}
	conns.Wait()

	// Huge size prefixes.
	for i := 0; i < 50; i++ {
		if nc := dial(); nc != nil {
			nc.Write([]byte{0x40, 0, 0, 0})
			nc.Close()
		}
	}
	// Byte-at-a-time: a valid ApiVersions request dribbled out.
	if nc := dial(); nc != nil {
		req := itest.Frame(18, 0, 1, false, nil)
		for _, b := range req {
			nc.Write([]byte{b})
			time.Sleep(time.Millisecond)
		}
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		var size [4]byte
		if _, err := nc.Read(size[:]); err != nil {
			t.Errorf("byte-at-a-time request not answered: %v", err)
		}
		nc.Close()
	}
	// Every API key 0..100 at versions -1..20 with garbage bodies.
	rng := rand.New(rand.NewPCG(1, 2))
	for key := int16(0); key <= 100; key++ {
		nc := dial()
		if nc == nil {
			continue
		}
		for v := int16(-1); v <= 20; v++ {
			body := make([]byte, rng.IntN(200))
			for i := range body {
				body[i] = byte(rng.Uint32())
			}
			f := itest.Frame(key, v, int32(v), rng.IntN(2) == 0, body)
			nc.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := nc.Write(f); err != nil {
				nc.Close()
				if nc = dial(); nc == nil {
					break
				}
			}
		}
		if nc != nil {
			nc.Close()
		}
	}
	// A length prefix of garbage frames pipelined on one connection.
	if nc := dial(); nc != nil {
		var buf []byte
		for i := 0; i < 1000; i++ {
			buf = binary.BigEndian.AppendUint32(buf, uint32(rng.IntN(64)))
			buf = append(buf, make([]byte, 64)...)
		}
		nc.Write(buf)
		nc.Close()
	}

	time.Sleep(200 * time.Millisecond)
	cancel()
	wg.Wait()
	if served.Load() == 0 || failed.Load() > 0 {
		t.Fatalf("good client: %d produces served, %d failed", served.Load(), failed.Load())
	}
	rss := itest.PeakRSSKiB(t, p.Cmd.Process.Pid)
	t.Logf("good client served %d produces; broker peak RSS %d MiB", served.Load(), rss/1024)
	if rss > 512*1024 {
		t.Fatalf("peak RSS %d MiB", rss/1024)
	}
	if err := p.Stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("broker did not shut down cleanly after the hostile suite: %v", err)
	}
	if strings.Contains(p.Output(), "panic") {
		t.Fatalf("panic in the broker's log:\n%s", p.Output())
	}
}
