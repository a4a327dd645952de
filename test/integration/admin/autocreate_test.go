package admin

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestAutoCreateDisabled: with auto.create.topics.enable=false a producer
// naming an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION (from Metadata
// through kgo, from Produce itself on a raw request, and through kcat) and
// no topic appears; existing topics still take records.
func TestAutoCreateDisabled(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Set("auto.create.topics.enable", "false"), minibrokertest.Topic("exists", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// kgo asks Metadata (allowing auto-creation), is told the topic is
	// unknown, and fails the record once its retries or timeout run out.
	prod := itest.NewClient(t, c.Addr(), kgo.AllowAutoTopicCreation(),
		kgo.UnknownTopicRetries(2), kgo.RecordDeliveryTimeout(3*time.Second), kgo.ProduceRequestTimeout(2*time.Second))
	err := prod.ProduceSync(ctx, &kgo.Record{Topic: "missing", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("produce to missing topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	r := &kgo.Record{Topic: "exists", Value: []byte("y")}
	if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil || r.Offset != 0 {
		t.Fatalf("produce to existing topic: offset %d, %v", r.Offset, err)
	}

	// A Produce request straight to the broker, skipping Metadata, gets the
	// same code per partition and a base offset of -1.
	conn := itest.DialRaw(t, c.Addr())
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "missing"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = itest.RecordBatch([]byte("raw"))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	conn.Write(itest.RequestFrame(req, 1))
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = req.Version
	if err := resp.ReadFrom(conn.ReadResponse(1, req.IsFlexible())); err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response: %+v", resp)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code || p.BaseOffset != -1 {
		t.Fatalf("raw produce to missing topic: code %d base %d, want %d and -1", p.ErrorCode, p.BaseOffset, kerr.UnknownTopicOrPartition.Code)
	}

	// librdkafka: kcat -L names the topic with the broker's error, and
	// kcat -P keeps retrying it as unknown until the message times out.
	text, _ := itest.RunKcat(t, "", "-L", "-b", c.Addr(), "-t", "missing")
	if want := "  topic \"missing\" with 0 partitions: Broker: Unknown topic or partition\n"; !strings.Contains(text, want) {
		t.Fatalf("kcat -L -t missing:\n%s\nwant a line %q", text, want)
	}
	kctx, kcancel := context.WithTimeout(ctx, 15*time.Second)
	defer kcancel()
	cmd := exec.CommandContext(kctx, itest.KcatBinary(t), "-P", "-b", c.Addr(), "-t", "missing", "-X", "message.timeout.ms=1000")
	cmd.Stdin = strings.NewReader("lost\n")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "Delivery failed for message: Local: Message timed out") {
		t.Fatalf("kcat -P to missing topic: exit %d (%v), output %q", code, err, out)
	}

	// Nothing was created along the way.
	if _, ok := c.Broker().Topic("missing"); ok {
		t.Fatal("topic missing was created")
	}
	md := itest.KadmMetadata(t, c.Addr())
	md.Topics.FilterInternal() // the broker's own internal topics
	if len(md.Topics) != 1 || md.Topics["exists"].Err != nil {
		t.Fatalf("topics: %v, want [exists]", md.Topics.Names())
	}
}
