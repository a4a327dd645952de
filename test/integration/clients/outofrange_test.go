package clients

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestOffsetOutOfRangeAfterDeleteRecords: after DeleteRecords moves the
// log start to 6, every client asking for offset 2 is told
// OFFSET_OUT_OF_RANGE and reacts as it does against Kafka: kgo and
// librdkafka (auto.offset.reset=earliest) reset to the log start, sarama
// and a kafka-go Conn return the error (kafka-go's Reader clamps to the
// log start before asking); asking for the oldest offset starts at 6
// everywhere.
func TestOffsetOutOfRangeAfterDeleteRecords(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("trimmed", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("trimmed"))
	for i := range 10 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("v%d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	deletes := make(kadm.Offsets)
	deletes.Add(kadm.Offset{Topic: "trimmed", Partition: 0, At: 6})
	if dr, err := kadm.NewClient(prod).DeleteRecords(ctx, deletes); err != nil || dr["trimmed"][0].Err != nil || dr["trimmed"][0].LowWatermark != 6 {
		t.Fatalf("delete records: %+v, %v", dr, err)
	}
	want := []string{"6 v6", "7 v7", "8 v8", "9 v9"}

	t.Run("kgo", func(t *testing.T) {
		cl := itest.NewClient(t, c.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"trimmed": {0: kgo.NewOffset().At(2)}}),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []string
		for len(got) < len(want) {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("kgo consumed %v", got)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("kgo fetch: %v", err) })
			fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d %s", r.Offset, r.Value)) })
		}
		if !slices.Equal(got, want) {
			t.Fatalf("kgo from 2 (reset to start): %v, want %v", got, want)
		}
	})

	t.Run("sarama", func(t *testing.T) {
		cons, err := sarama.NewConsumer([]string{c.Addr()}, itest.SaramaConfig(sarama.DefaultVersion))
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		if pc, err := cons.ConsumePartition("trimmed", 0, 2); !errors.Is(err, sarama.ErrOffsetOutOfRange) {
			if pc != nil {
				pc.Close()
			}
			t.Fatalf("sarama ConsumePartition at 2: %v, want %v", err, sarama.ErrOffsetOutOfRange)
		}
		pc, err := cons.ConsumePartition("trimmed", 0, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		var got []string
		for len(got) < len(want) {
			select {
			case m := <-pc.Messages():
				got = append(got, fmt.Sprintf("%d %s", m.Offset, m.Value))
			case err := <-pc.Errors():
				t.Fatalf("sarama: %v", err)
			case <-ctx.Done():
				t.Fatalf("sarama consumed %v", got)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("sarama from oldest: %v, want %v", got, want)
		}
	})

	t.Run("kafka-go", func(t *testing.T) {
		// The Reader clamps an offset below the log start to the log start
		// itself (ListOffsets earliest) before fetching.
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{c.Addr()}, Topic: "trimmed", MaxWait: 100 * time.Millisecond})
		defer r.Close()
		if err := r.SetOffset(2); err != nil {
			t.Fatal(err)
		}
		var got []string
		for len(got) < len(want) {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("kafka-go reader after %v: %v", got, err)
			}
			got = append(got, fmt.Sprintf("%d %s", m.Offset, m.Value))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("kafka-go reader from 2: %v, want %v", got, want)
		}
		// A Conn told not to check fetches at 2 and gets the broker's error.
		conn, err := kafka.DialLeader(ctx, "tcp", c.Addr(), "trimmed", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Seek(2, kafka.SeekAbsolute|kafka.SeekDontCheck); err != nil {
			t.Fatal(err)
		}
		batch := conn.ReadBatch(1, 1<<20)
		_, err = batch.ReadMessage()
		batch.Close()
		if !errors.Is(err, kafka.OffsetOutOfRange) {
			t.Fatalf("kafka-go conn fetch at 2: %v, want %v", err, kafka.OffsetOutOfRange)
		}
		// kafka-go leaves the rest of an errored partition (its record set
		// size) unread, so this Conn is out of step now (as against
		// Kafka): ask on a new one.
		conn2, err := kafka.DialLeader(ctx, "tcp", c.Addr(), "trimmed", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer conn2.Close()
		if first, last, err := conn2.ReadOffsets(); err != nil || first != 6 || last != 10 {
			t.Fatalf("kafka-go ReadOffsets: %d..%d (%v), want 6..10", first, last, err)
		}
	})

	t.Run("kcat", func(t *testing.T) {
		out, _ := itest.RunKcat(t, "", "-C", "-b", c.Addr(), "-t", "trimmed", "-p", "0", "-o", "2", "-e",
			"-X", "auto.offset.reset=earliest", "-f", "%o %s\n")
		if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !slices.Equal(got, want) {
			t.Fatalf("kcat from 2 (reset to earliest): %q, want %q", got, want)
		}
	})
}
