package storage

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBinaryKill9KeepsAcknowledgedRecords runs the built binary under
// idempotent kgo load, kills it with SIGKILL, restarts it on the same data
// and checks every acknowledged record is there exactly once — in the
// default flush policy (the page cache survives a process kill) and with
// log.flush.interval.messages=1.
func TestBinaryKill9KeepsAcknowledgedRecords(t *testing.T) {
	t.Parallel()
	for _, policy := range [][]string{nil, {"--set", "log.flush.interval.messages=1"}} {
		t.Run(fmt.Sprint(policy), func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"--set", "num.partitions=3", "--set", "log.segment.bytes=65536"}, policy...)
			p := itest.StartBinary(t, dir, args...)
			cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.DefaultProduceTopic("crash"), kgo.AllowAutoTopicCreation(),
				kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordRetries(1), kgo.RecordDeliveryTimeout(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			acked := map[string]bool{}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ctx.Err() == nil; i++ {
					v := fmt.Sprintf("rec-%07d", i)
					cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(_ *kgo.Record, err error) {
						if err == nil {
							mu.Lock()
							acked[v] = true
							mu.Unlock()
						}
					})
					if i%64 == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			}()
			// Kill once a good number of records were acknowledged (the
			// machine may be slow), while production goes on.
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				mu.Lock()
				n := len(acked)
				mu.Unlock()
				if n >= 2000 || time.Now().After(deadline) {
					break
				}
			}
			p.Stop(t, syscall.SIGKILL)
			cancel()
			wg.Wait()
			cl.Close() // fails what was in flight
			mu.Lock()
			n := len(acked)
			mu.Unlock()
			if n < 100 {
				t.Fatalf("only %d records acknowledged before the kill", n)
			}

			p2 := itest.StartBinary(t, dir)
			var total int64
			for part := int32(0); part < 3; part++ {
				total += itest.EndOffset(t, itest.NewClient(t, p2.Addr), "crash", part)
			}
			got := itest.ConsumeAll(t, p2.Addr, "crash", int(total))
			seen := map[string]int{}
			for _, r := range got {
				seen[string(r.Value)]++
			}
			for v, c := range seen {
				if c > 1 {
					t.Fatalf("%s present %d times", v, c)
				}
			}
			missing := 0
			for v := range acked {
				if seen[v] == 0 {
					missing++
				}
			}
			if missing > 0 {
				t.Fatalf("%d of %d acknowledged records lost", missing, n)
			}
			t.Logf("%d acknowledged records, %d read back after kill -9", n, len(got))
			p2.Stop(t, syscall.SIGTERM)
		})
	}
}
