package clients

import (
	"context"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/minibrokertest"
)

// franz-go's kgo, with kadm for the admin rows.

func kgoCompatVersion(t *testing.T) string {
	return "franz-go " + moduleVersion(t, "github.com/twmb/franz-go") + " (kadm " + moduleVersion(t, "github.com/twmb/franz-go/pkg/kadm") + ")"
}

func kgoCodec(codec int8) kgo.CompressionCodec {
	return map[int8]kgo.CompressionCodec{batch.CodecNone: kgo.NoCompression(), batch.CodecGzip: kgo.GzipCompression(),
		batch.CodecSnappy: kgo.SnappyCompression(), batch.CodecLZ4: kgo.Lz4Compression(), batch.CodecZstd: kgo.ZstdCompression()}[codec]
}

func kgoCompat(t *testing.T, m *compatMatrix) {
	const client = "kgo"
	compatSecurityRows(t, m, client, kgoSecureProduce)
	c := minibrokertest.Start(t, itest.Fast848()...)
	compatProduceRows(t, m, client, c, nil, func(t *testing.T, topic string, values []string, spec produceSpec) string {
		opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgoCodec(spec.codec)),
			kgo.ProducerLinger(5 * time.Millisecond)}
		switch spec.acks {
		case "0":
			opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
		case "1":
			opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
		default:
			opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
			if !spec.idempotent {
				opts = append(opts, kgo.DisableIdempotentWrite())
			}
		}
		cl := itest.NewClient(t, c.Addr(), opts...)
		defer cl.Close()
		recs := make([]*kgo.Record, len(values))
		for i, v := range values {
			recs[i] = &kgo.Record{Value: []byte(v)}
		}
		if err := cl.ProduceSync(itest.CompatCtx(t), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if spec.acks != "0" {
			for i, r := range recs {
				if r.Offset != int64(i) {
					t.Fatalf("record %d acknowledged at offset %d", i, r.Offset)
				}
			}
		}
		return ""
	}, func(t *testing.T, topic string, n int) []itest.CompatRecord {
		return itest.KgoCompatRead(t, c.Addr(), topic, false, n)
	})

	compatTxnRow(t, m, client, c, func(t *testing.T, topic string, commit bool, values []string) {
		cl := itest.TxnClient(t, c.Addr(), "kgo-compat", topic)
		defer cl.Close()
		itest.ProduceTxn(t, cl, commit, values...)
	}, func(t *testing.T, topic string, committed bool, n int) []itest.CompatRecord {
		return itest.KgoCompatRead(t, c.Addr(), topic, committed, n)
	})
	var v2 *kgo.Client
	compatTxnV2Row(t, m, client, c, "kgo-compat-v2", func(t *testing.T, topic string, commit bool, values []string) {
		if v2 == nil {
			v2 = itest.TxnClient(t, c.Addr(), "kgo-compat-v2", topic)
		}
		itest.ProduceTxn(t, v2, commit, values...)
	}, func(t *testing.T, topic string, committed bool, n int) []itest.CompatRecord {
		return itest.KgoCompatRead(t, c.Addr(), topic, committed, n)
	}, true, "")
	compatControlRow(t, m, client, c, func(t *testing.T, topic string, committed bool, n int) []itest.CompatRecord {
		return itest.KgoCompatRead(t, c.Addr(), topic, committed, n)
	})
	compatGroupRow(t, m, client, c, func(t *testing.T, group, topic string) itest.CompatMember {
		return itest.StartKgoMember(t, c.Addr(), group, topic)
	})
	compatGroup848Row(t, m, client, c, func(t *testing.T, group, topic string) itest.CompatMember {
		return itest.StartKgoMember(t, c.Addr(), group, topic, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	})

	ctx := func(t *testing.T) context.Context { return itest.CompatCtx(t) }
	adm := func(t *testing.T) *kadm.Client { return itest.KadmClient(t, c.Addr()) }
	compatAdminRows(t, m, client, c, adminOps{
		create: func(t *testing.T, topic string, parts int32, configs map[string]string) {
			cfg := map[string]*string{}
			for k, v := range configs {
				cfg[k] = kadm.StringPtr(v)
			}
			resp, err := adm(t).CreateTopics(ctx(t), parts, 1, cfg, topic)
			if err == nil {
				err = resp[topic].Err
			}
			if err != nil {
				t.Fatalf("CreateTopics: %v", err)
			}
		},
		delete: func(t *testing.T, topic string) {
			resp, err := adm(t).DeleteTopics(ctx(t), topic)
			if err == nil {
				err = resp[topic].Err
			}
			if err != nil {
				t.Fatalf("DeleteTopics: %v", err)
			}
		},
		describe: func(t *testing.T, topic string) map[string]string {
			rcs, err := adm(t).DescribeTopicConfigs(ctx(t), topic)
			if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
				t.Fatalf("DescribeTopicConfigs: %v %v", err, rcs)
			}
			out := map[string]string{}
			for _, cfg := range rcs[0].Configs {
				out[cfg.Key] = cfg.MaybeValue()
			}
			return out
		},
		listEnds: func(t *testing.T, topic string) (int64, int64) {
			start, err := adm(t).ListStartOffsets(ctx(t), topic)
			if err != nil {
				t.Fatal(err)
			}
			end, err := adm(t).ListEndOffsets(ctx(t), topic)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := start.Lookup(topic, 0)
			e, _ := end.Lookup(topic, 0)
			if s.Err != nil || e.Err != nil {
				t.Fatalf("list offsets: %v %v", s.Err, e.Err)
			}
			return s.Offset, e.Offset
		},
		listTime: func(t *testing.T, topic string, ts time.Time) int64 {
			l, err := adm(t).ListOffsetsAfterMilli(ctx(t), ts.UnixMilli(), topic)
			if err != nil {
				t.Fatal(err)
			}
			o, _ := l.Lookup(topic, 0)
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			return o.Offset
		},
	})
}
