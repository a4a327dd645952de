package tools

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// `minibroker serve` refuses to start on each setting Kafka's ConfigDef
// refuses, whether given by --set, the config file or a flag, and on a
// meta.properties of an unknown version; it exits non-zero with the key,
// the value and the rule, having bound no port. (Before the settings
// table, every one of these started: the first two clamped to 2^31-1, the
// third read as CreateTime, the fourth failed every produce.)
func TestBinaryRefusesBadSettings(t *testing.T) {
	t.Parallel()
	bin := itest.MinibrokerBinary(t)
	for _, c := range []struct {
		name string
		args []string
		file string // config file contents, if any
		meta string // meta.properties to find in the data dir, if any
		want []string
	}{
		{name: "segment bytes", args: []string{"--set", "log.segment.bytes=3000000000"},
			want: []string{"log.segment.bytes", "3000000000", "not a number of type INT"}},
		{name: "request size in the file", file: "kafka:\n  socket.request.max.bytes: 3000000000\n",
			want: []string{"socket.request.max.bytes", "3000000000", "not a number of type INT"}},
		{name: "timestamp type", args: []string{"--set", "log.message.timestamp.type=Bogus"},
			want: []string{"log.message.timestamp.type", "Bogus", "string must be one of: CreateTime, LogAppendTime"}},
		{name: "node id", args: []string{"--node-id", "-1"},
			want: []string{"--node-id", "-1", "at least 0"}},
		{name: "meta version", meta: "version=7\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\nnode.id=0\n",
			want: []string{"meta.properties", "version=7"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			if c.meta != "" {
				os.MkdirAll(data, 0o755)
				if err := os.WriteFile(filepath.Join(data, "meta.properties"), []byte(c.meta), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"serve", "--data-dir", data, "--listen", "127.0.0.1:0", "--http-listen", ""}
			if c.file != "" {
				p := filepath.Join(dir, "c.yaml")
				os.WriteFile(p, []byte(c.file), 0o644)
				args = append(args, "--config", p)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, append(args, c.args...)...).CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("still running after 30 s: started with a bad setting\n%s", out)
			}
			if err == nil {
				t.Fatalf("exited 0:\n%s", out)
			}
			for _, w := range c.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// Topic configs altered through the built binary survive kill -9: the
// answer comes only once topics.json holds them (fsynced), so a SIGKILL
// right after it loses nothing, and the restarted broker's partition
// rolls at the altered size.
func TestBinaryAlteredConfigsSurviveKill9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := itest.StartBinary(t, dir)
	cl := itest.NewClient(t, p.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "k9"); err != nil {
		t.Fatal(err)
	}
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "segment.bytes", Value: itest.Sp("16384")},
		{Op: kadm.SetConfig, Name: "message.timestamp.type", Value: itest.Sp("LogAppendTime")},
	}, "k9")
	if r, _ := resp.On("k9", nil); err != nil || r.Err != nil {
		t.Fatalf("alter: %v %v", err, r.Err)
	}
	cl.Close()
	p.Stop(t, syscall.SIGKILL)

	p = itest.StartBinary(t, dir)
	cl = itest.NewClient(t, p.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm = kadm.NewClient(cl)
	itest.WantConfig(t, adm, "k9", "segment.bytes", "16384", kmsg.ConfigSourceDynamicTopicConfig)
	itest.WantConfig(t, adm, "k9", "message.timestamp.type", "LogAppendTime", kmsg.ConfigSourceDynamicTopicConfig)
	itest.ProduceValues(t, cl, "k9", 40, 1000)
	if n := len(itest.SegmentFiles(t, dir, "k9", 0)); n < 2 {
		t.Fatalf("%d segments after 40 KB at segment.bytes=16384", n)
	}
	// LogAppendTime: the broker stamps the records, whatever the producer sent.
	old := time.Now().Add(-48 * time.Hour)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "k9", Partition: 0, Timestamp: old, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fetched := itest.NewClient(t, p.Addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"k9": {0: kgo.NewOffset().AtEnd().Relative(-1)}}))
	fctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	fs := fetched.PollFetches(fctx)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	recs := fs.Records()
	if len(recs) != 1 || recs[0].Timestamp.Before(time.Now().Add(-time.Hour)) {
		t.Fatalf("records %v: not stamped with the append time", recs)
	}
}
