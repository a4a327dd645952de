package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `minibroker serve` refuses to start on each setting Kafka's ConfigDef
// refuses, whether given by --set, the config file or a flag, and on a
// meta.properties of an unknown version; it exits non-zero with the key,
// the value and the rule, having bound no port. (Before the settings
// table, every one of these started: the first two clamped to 2^31-1, the
// third read as CreateTime, the fourth failed every produce.)
func TestBinaryRefusesBadSettings(t *testing.T) {
	t.Parallel()
	bin := minibrokerBinary(t)
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
