package txn

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// BenchmarkTxnCommit: one kgo transactional producer, each iteration a
// transaction of 10 records over 2 partitions, committed (InitProducerId
// once; AddPartitionsToTxn, Produce, EndTxn and its markers per
// iteration). The peer is franz-go's in-memory kfake in the same run;
// minibroker also fsyncs its transaction log twice per commit.
func BenchmarkTxnCommit(b *testing.B) {
	run := func(b *testing.B, addr string) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("bench"), kgo.DefaultProduceTopic("tb"),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		ctx := context.Background()
		recs := make([]*kgo.Record, 10)
		for b.Loop() {
			if err := cl.BeginTransaction(); err != nil {
				b.Fatal(err)
			}
			for i := range recs {
				recs[i] = &kgo.Record{Value: []byte(fmt.Sprint(i))}
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				b.Fatal(err)
			}
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("minibroker", func(b *testing.B) {
		c := minibrokertest.Start(b, minibrokertest.Topic("tb", 2))
		run(b, c.Addr())
	})
	b.Run("kfake", func(b *testing.B) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "tb"))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		run(b, c.ListenAddrs()[0])
	})
}

// BenchmarkTxnCommitParallel: as BenchmarkTxnCommit with 16 producers
// (distinct transactional ids) at once; minibroker's transaction-log
// fsyncs are shared between concurrent requests (group commit).
func BenchmarkTxnCommitParallel(b *testing.B) {
	run := func(b *testing.B, addr string) {
		var ids atomic.Int64
		b.SetParallelism(8) // × GOMAXPROCS goroutines
		b.RunParallel(func(pb *testing.PB) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(fmt.Sprint("bench-", ids.Add(1))),
				kgo.DefaultProduceTopic("tb"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
			if err != nil {
				b.Error(err)
				return
			}
			defer cl.Close()
			ctx := context.Background()
			for pb.Next() {
				if err := cl.BeginTransaction(); err != nil {
					b.Error(err)
					return
				}
				recs := make([]*kgo.Record, 10)
				for i := range recs {
					recs[i] = &kgo.Record{Value: []byte(fmt.Sprint(i))}
				}
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					b.Error(err)
					return
				}
				if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("minibroker", func(b *testing.B) {
		c := minibrokertest.Start(b, minibrokertest.Topic("tb", 2))
		run(b, c.Addr())
	})
	b.Run("kfake", func(b *testing.B) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "tb"))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		run(b, c.ListenAddrs()[0])
	})
}
