package clients

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// With client.protocol.version=3.9 ApiVersions advertises Kafka 3.9's
// ranges (the versions KIP-896 removed from Kafka 4 are back); by default
// Kafka 4's.
func TestKafka39ApiVersions(t *testing.T) {
	t.Parallel()
	ranges := func(c *minibrokertest.Cluster) string {
		rc := itest.DialRaw(t, c.Addr())
		av := kmsg.NewPtrApiVersionsRequest()
		av.Version = 0
		rc.Write(itest.RequestFrame(av, 1))
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		if err := resp.ReadFrom(rc.ReadResponse(1, false)); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range resp.ApiKeys {
			switch k.ApiKey {
			case 0, 1, 2, 3, 19, 20, 23, 34:
				out = append(out, fmt.Sprintf("%d:%d-%d", k.ApiKey, k.MinVersion, k.MaxVersion))
			}
		}
		return strings.Join(out, " ")
	}
	if got, want := ranges(minibrokertest.Start(t, itest.Kafka39)), "0:0-11 1:0-17 2:0-9 3:0-12 19:0-7 20:0-6 23:0-4 34:0-2"; got != want {
		t.Errorf("3.9: %s, want %s", got, want)
	}
	if got, want := ranges(minibrokertest.Start(t)), "0:3-12 1:4-18 2:1-10 3:0-13 19:2-7 20:1-6 23:2-4 34:1-2"; got != want {
		t.Errorf("4.0: %s, want %s", got, want)
	}
}

// Produce v0–v2 and Fetch v0–v3 with client.protocol.version=3.9: magic-2
// batches are appended at consecutive offsets and read back by every old
// Fetch version (as record batches v2: minibroker does not down-convert);
// a magic-1 message set is UNSUPPORTED_FOR_MESSAGE_FORMAT. By default the
// same requests close the connection, as in Kafka 4.
func TestKafka39OldProduceAndFetch(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("old", 1), itest.Kafka39)
	rc := itest.DialRaw(t, c.Addr())
	corr := int32(0)
	produce := func(v int16, records []byte) *kmsg.ProduceResponse {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = v, -1, 5000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "old", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: records}}}}
		corr++
		rc.Write(itest.RequestFrame(req, corr))
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = v
		if err := resp.ReadFrom(rc.ReadResponse(corr, false)); err != nil {
			t.Fatalf("produce v%d: %v", v, err)
		}
		return resp
	}
	for v := int16(0); v <= 2; v++ {
		p := produce(v, itest.RecordBatch([]byte(fmt.Sprintf("v%d", v)))).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != int64(v) {
			t.Fatalf("produce v%d: code %d offset %d", v, p.ErrorCode, p.BaseOffset)
		}
	}
	// A magic-1 message (offset, size, crc, magic 1, attributes, timestamp, key, value).
	old := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 22, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	if code := produce(2, old).Topics[0].Partitions[0].ErrorCode; code != kerr.UnsupportedForMessageFormat.Code {
		t.Fatalf("magic 1: code %d, want UNSUPPORTED_FOR_MESSAGE_FORMAT", code)
	}
	for v := int16(0); v <= 3; v++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MinBytes = v, 0, 0
		req.Topics = []kmsg.FetchRequestTopic{{Topic: "old", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: 1, PartitionMaxBytes: 1 << 20}}}}
		corr++
		rc.Write(itest.RequestFrame(req, corr))
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = v
		if err := resp.ReadFrom(rc.ReadResponse(corr, false)); err != nil {
			t.Fatalf("fetch v%d: %v", v, err)
		}
		p := resp.Topics[0].Partitions[0]
		var got []string
		for raw := p.RecordBatches; len(raw) > 0; {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(raw); err != nil {
				t.Fatalf("fetch v%d: batch: %v", v, err)
			}
			raw = raw[12+int(rb.Length):]
			recs := rb.Records
			for range rb.NumRecords {
				var r kmsg.Record
				if err := r.ReadFrom(recs); err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("%d:%s", rb.FirstOffset+int64(r.OffsetDelta), r.Value))
				recs = recs[len(r.AppendTo(nil)):]
			}
		}
		if p.ErrorCode != 0 || p.HighWatermark != 3 || strings.Join(got, " ") != "1:v1 2:v2" {
			t.Fatalf("fetch v%d: code %d hw %d records %v", v, p.ErrorCode, p.HighWatermark, got)
		}
	}

	// Kafka 4's ranges (the default): each of these closes the connection.
	c4 := minibrokertest.Start(t, minibrokertest.Topic("old", 1))
	for _, req := range []kmsg.Request{
		func() kmsg.Request { r := kmsg.NewPtrProduceRequest(); r.Version = 2; return r }(),
		func() kmsg.Request { r := kmsg.NewPtrFetchRequest(); r.Version = 3; return r }(),
		func() kmsg.Request { r := kmsg.NewPtrListOffsetsRequest(); r.Version = 0; return r }(),
	} {
		rc4 := itest.DialRaw(t, c4.Addr())
		rc4.Write(itest.RequestFrame(req, 1))
		rc4.ExpectClosed()
	}
}

// ListOffsets v0 with client.protocol.version=3.9, as Kafka 3.9 answers
// it: an offsets array, newest first, of the segments' base offsets and
// the log end offset, at most MaxNumOffsets of them; -2 the log start.
func TestKafka39ListOffsetsV0(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, itest.Kafka39,
		minibrokertest.TopicWithConfigs("lo", 1, map[string]string{"segment.bytes": "200"}))
	rc := itest.DialRaw(t, c.Addr())
	corr := int32(0)
	for i := range 4 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "lo", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0,
			Records: itest.RecordBatch([]byte(strings.Repeat(fmt.Sprint(i), 150)))}}}}
		corr++
		rc.Write(itest.RequestFrame(req, corr))
		rc.ReadResponse(corr, req.IsFlexible())
	}
	bases := itest.MustPartition(t, c, "lo", 0).SegmentStats()
	if len(bases) < 3 {
		t.Fatalf("%d segments, want several (segment.bytes 200)", len(bases))
	}
	list := func(ts int64, maxN int32) []int64 {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = 0, -1
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "lo", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: ts, MaxNumOffsets: maxN}}}}
		corr++
		rc.Write(itest.RequestFrame(req, corr))
		resp := kmsg.NewPtrListOffsetsResponse()
		resp.Version = 0
		if err := resp.ReadFrom(rc.ReadResponse(corr, false)); err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("ts %d max %d: code %d", ts, maxN, p.ErrorCode)
		}
		return p.OldStyleOffsets
	}
	var want []int64
	for _, s := range bases {
		want = append(want, s.Base)
	}
	if last := bases[len(bases)-1]; last.Size > 0 {
		want = append(want, 4)
	}
	slices.Reverse(want)
	if got := list(-1, 100); !slices.Equal(got, want) {
		t.Errorf("latest, max 100: %v, want %v", got, want)
	}
	if got := list(-1, 1); !slices.Equal(got, want[:1]) || got[0] != 4 {
		t.Errorf("latest, max 1: %v, want [4]", got)
	}
	if got := list(-2, 5); !slices.Equal(got, []int64{0}) {
		t.Errorf("earliest: %v, want [0]", got)
	}
	if got := list(time.Now().Add(time.Hour).UnixMilli(), 2); !slices.Equal(got, want[:2]) {
		t.Errorf("a future timestamp, max 2: %v, want %v", got, want[:2])
	}
	if got := list(0, 5); len(got) != 0 {
		t.Errorf("timestamp 0 (before every segment): %v, want none", got)
	}
}

// sarama configured for Kafka 0.10.0 (as Burrow 1.2 and other old
// tools are) reads a topic with client.protocol.version=3.9: its
// GetOffset is ListOffsets v0, its consumer Fetch v2. By default the
// broker does not serve those versions and sarama fails.
func TestKafka39SaramaOldVersion(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("sold", 1), itest.Kafka39)
	prodCfg := itest.SaramaConfig(sarama.V2_1_0_0)
	prod, err := sarama.NewSyncProducer([]string{c.Addr()}, prodCfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "sold", Partition: 0, Value: sarama.StringEncoder(fmt.Sprint("m", i))}); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()
	read := func(addr string) ([]string, error) {
		cfg := itest.SaramaConfig(sarama.V0_10_0_0)
		cfg.Metadata.Retry.Max = 0
		client, err := sarama.NewClient([]string{addr}, cfg)
		if err != nil {
			return nil, err
		}
		defer client.Close()
		newest, err := client.GetOffset("sold", 0, sarama.OffsetNewest)
		if err != nil {
			return nil, fmt.Errorf("GetOffset: %w", err)
		}
		cons, err := sarama.NewConsumerFromClient(client)
		if err != nil {
			return nil, err
		}
		defer cons.Close()
		pc, err := cons.ConsumePartition("sold", 0, sarama.OffsetOldest)
		if err != nil {
			return nil, err
		}
		defer pc.Close()
		var got []string
		for int64(len(got)) < newest {
			select {
			case m := <-pc.Messages():
				got = append(got, fmt.Sprintf("%d:%s", m.Offset, m.Value))
			case err := <-pc.Errors():
				return got, err
			case <-time.After(10 * time.Second):
				return got, fmt.Errorf("timed out with %v", got)
			}
		}
		return got, nil
	}
	got, err := read(c.Addr())
	if err != nil || strings.Join(got, " ") != "0:m0 1:m1 2:m2" {
		t.Fatalf("sarama 0.10.0 on 3.9 ranges: %v, %v", got, err)
	}
	c4 := minibrokertest.Start(t, minibrokertest.Topic("sold", 1))
	if got, err := read(c4.Addr()); err == nil {
		t.Fatalf("sarama 0.10.0 on Kafka 4's ranges read %v: it should fail", got)
	}
}
