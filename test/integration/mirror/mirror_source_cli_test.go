package mirror

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/minibroker/minibroker/internal/mirror"
)

// TestMirrorSourceSecurityCLI drives a SASL_SSL (SCRAM-SHA-512) source
// from the built binary: `mirror create` with --source-config-file (a Java
// .properties file whose sasl.jaas.config is split over lines) and
// --source-config, refusals of a wrong password (by the check at create)
// and of a bad setting, describe as text and JSON, list, `mirror alter`;
// and a second broker with the same settings as a static mirror in its
// config file. The password shows in no output and no log.
func TestMirrorSourceSecurityCLI(t *testing.T) {
	t.Parallel()
	pki := itest.NewSrcPKI(t, "src")
	src, admin := itest.SecureKfake(t, pki, "kfake-cli")
	itest.ProduceN(t, admin, "cli", 60)
	ends := itest.SourceEnds(t, admin, "orders")
	dir := t.TempDir()
	props := filepath.Join(dir, "source.properties")
	os.WriteFile(props, []byte("# the source cluster\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"+
		"    username=\"mirror\" \\\n    password=\""+itest.SrcMirrorPass+"\";\n"+
		"ssl.truststore.location="+pki.CAFile+"\n"), 0o600)

	b := itest.StartBinary(t, filepath.Join(dir, "b"), "--log-level", "debug")
	var outputs []string
	cli := func(wantOK bool, args ...string) string {
		t.Helper()
		out, err := itest.RunCLI(t, append(args, "--admin", b.HttpAddr)...)
		if (err == nil) != wantOK {
			t.Fatalf("minibroker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		outputs = append(outputs, out)
		return out
	}
	cli(true, "mirror", "create", "secure", "--source", src.ListenAddrs()[0], "--source-config-file", props,
		"--source-config", "ssl.endpoint.identification.algorithm=https")
	if out := cli(false, "mirror", "create", "wrong", "--source", src.ListenAddrs()[0], "--source-config-file", props,
		"--source-config", "sasl.jaas.config="+itest.ScramJaas("mirror", "not-"+itest.SrcMirrorPass)); !strings.Contains(out, "unreachable") {
		t.Fatalf("a wrong password at create: %s", out)
	}
	if out := cli(false, "mirror", "create", "gssapi", "--source", src.ListenAddrs()[0], "--source-config-file", props,
		"--source-config", "sasl.mechanism=GSSAPI"); !strings.Contains(out, "sasl.mechanism=\"GSSAPI\"") {
		t.Fatalf("GSSAPI at create: %s", out)
	}
	cli(true, "mirror", "start", "secure", "--topics", "orders")
	caughtUp := func(node string, describe func() mirror.Status) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			st := describe()
			if itest.CaughtUpTo(ends)(st) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not caught up: %+v", node, st)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	caughtUp("cli", func() mirror.Status {
		var st mirror.Status
		if err := json.Unmarshal([]byte(cli(true, "mirror", "describe", "secure", "--json")), &st); err != nil {
			t.Fatal(err)
		}
		return st
	})
	if out := cli(true, "mirror", "describe", "secure"); !strings.Contains(out, "sasl.jaas.config=[hidden]") ||
		!strings.Contains(out, "security.protocol=SASL_SSL") {
		t.Fatalf("describe: %s", out)
	}
	cli(true, "mirror", "list")
	cli(true, "mirror", "list", "--json")
	if out := cli(false, "mirror", "alter", "secure"); !strings.Contains(out, "--source-config") {
		t.Fatalf("alter with nothing: %s", out)
	}
	cli(true, "mirror", "alter", "secure", "--source-config-file", props)
	itest.ProduceN(t, admin, "after-alter", 20)
	ends = itest.SourceEnds(t, admin, "orders")
	caughtUp("cli after alter", func() mirror.Status {
		var st mirror.Status
		json.Unmarshal([]byte(cli(true, "mirror", "describe", "secure", "--json")), &st)
		return st
	})

	// The same settings declared in a config file.
	cfg := filepath.Join(dir, "mb.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("mirrors:\n  - name: static\n    source: [%q]\n    topics: [orders]\n"+
		"    source-config-file: %q\n    source-config:\n      ssl.endpoint.identification.algorithm: \"\"\n",
		src.ListenAddrs()[0], props)), 0o600)
	c := itest.StartBinary(t, filepath.Join(dir, "c"), "--config", cfg, "--log-level", "debug")
	caughtUp("static", func() mirror.Status {
		out, err := itest.RunCLI(t, "mirror", "describe", "static", "--json", "--admin", c.HttpAddr)
		var st mirror.Status
		if err == nil {
			json.Unmarshal([]byte(out), &st)
			outputs = append(outputs, out)
		}
		return st
	})

	for _, n := range []struct {
		name string
		dir  string
		logs string
	}{{"b", filepath.Join(dir, "b"), b.Output()}, {"c", filepath.Join(dir, "c"), c.Output()}} {
		state := mirrorStateSegments(t, n.dir)
		fi, err := os.Stat(filepath.Join(n.dir, "mirror-sources.log"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mirror-sources.log %v %v", n.name, fi, err)
		}
		itest.AssertNoSecret(t, itest.SrcMirrorPass, map[string]string{n.name + " log": n.logs, n.name + " __mirror_state": string(state)})
	}
	itest.AssertNoSecret(t, itest.SrcMirrorPass, map[string]string{"CLI output": strings.Join(outputs, "\n")})
}
