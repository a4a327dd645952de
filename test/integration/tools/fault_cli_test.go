package tools

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The built binary without faults.enable has no fault endpoints (404),
// no fault series in /metrics, and the CLI says how to enable them; a
// Kafka client cannot turn faults on (the broker serves no config
// changes).
func TestFaultBinaryDisabledByDefault(t *testing.T) {
	t.Parallel()
	p := itest.StartBinary(t, t.TempDir())
	for _, req := range []struct{ method, path string }{{"GET", "/v1/faults"}, {"POST", "/v1/faults"}, {"DELETE", "/v1/faults"}, {"DELETE", "/v1/faults/1"}} {
		r, _ := http.NewRequest(req.method, "http://"+p.HttpAddr+req.path, strings.NewReader(`{"kind":"drop"}`))
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s %s: HTTP %d with faults disabled, want 404", req.method, req.path, resp.StatusCode)
		}
	}
	out, err := itest.RunCLI(t, "fault", "list", "--admin", p.HttpAddr)
	if err == nil || !strings.Contains(out, "faults.enable=true") {
		t.Fatalf("fault list on a broker without faults: err %v, output %s", err, out)
	}
	adm := kadm.NewClient(itest.NewClient(t, p.Addr))
	v := "true"
	// Broker settings are static: the answer refuses the change (or the
	// whole request, on a broker that serves no config changes).
	resps, err := adm.AlterBrokerConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "faults.enable", Value: &v}})
	if err == nil {
		if len(resps) == 0 {
			t.Fatal("no answer to AlterBrokerConfigs")
		}
		for _, r := range resps {
			if r.Err == nil {
				t.Fatal("a Kafka client altered faults.enable")
			}
		}
	}
	if m := itest.HttpGet(t, "http://"+p.HttpAddr+"/metrics"); strings.Contains(m, "minibroker_fault") {
		t.Fatal("fault series in /metrics with faults disabled")
	}
	resp, err := http.Get("http://" + p.HttpAddr + "/v1/faults")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after the Kafka client's attempt: HTTP %d", resp.StatusCode)
	}
}

// With --set faults.enable=true the CLI sets, lists and clears faults; a
// real client meets the fault; /metrics and the log show it.
func TestFaultCLIBinary(t *testing.T) {
	t.Parallel()
	p := itest.StartBinary(t, t.TempDir(), "--set", "faults.enable=true")
	admin := []string{"--admin", p.HttpAddr}
	out, err := itest.RunCLI(t, append([]string{"fault", "set", "--kind", "error", "--api", "Produce", "--error", "INVALID_RECORD", "--count", "1"}, admin...)...)
	if err != nil || !strings.Contains(out, "fault 1 set: error api=Produce error=INVALID_RECORD") {
		t.Fatalf("fault set: %v\n%s", err, out)
	}
	out, err = itest.RunCLI(t, append([]string{"fault", "set", "--kind", "latency", "--api", "Fetch", "--latency", "5ms"}, admin...)...)
	if err != nil || !strings.Contains(out, "fault 2 set") {
		t.Fatalf("fault set latency: %v\n%s", err, out)
	}
	cl := itest.NewClient(t, p.Addr, kgo.DefaultProduceTopic("orders"), kgo.AllowAutoTopicCreation())
	err = cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("produce: %v, want INVALID_RECORD from the fault", err)
	}
	if m := itest.HttpGet(t, "http://"+p.HttpAddr+"/metrics"); !strings.Contains(m, `minibroker_fault_fired_total{api="Produce",error="87",id="1",kind="error",mirror="",partition="",topic=""} 1`) ||
		!strings.Contains(m, `minibroker_fault_active{api="Fetch",error="",id="2",kind="latency",mirror="",partition="",topic=""} 1`) {
		t.Fatalf("faults not in /metrics:\n%s", grepLines(m, "minibroker_fault"))
	}
	out, err = itest.RunCLI(t, append([]string{"fault", "list"}, admin...)...)
	if err != nil || !strings.Contains(out, "false   1        1      error api=Produce error=INVALID_RECORD") {
		t.Fatalf("fault list: %v\n%s", err, out)
	}
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatalf("produce after the fault expired: %v", err)
	}
	out, err = itest.RunCLI(t, append([]string{"fault", "clear", "--all"}, admin...)...)
	if err != nil || !strings.Contains(out, "2 faults cleared") {
		t.Fatalf("fault clear: %v\n%s", err, out)
	}
	if out, _ := itest.RunCLI(t, append([]string{"fault", "list"}, admin...)...); !strings.Contains(out, "no faults") {
		t.Fatalf("fault list after clear:\n%s", out)
	}
	logs := p.Output()
	for _, want := range []string{`"msg":"fault injection enabled`, `"msg":"fault set"`, `"msg":"fault fired"`, `"msg":"fault expired"`, `"msg":"faults cleared"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s", want)
		}
	}
	out, err = itest.RunCLI(t, append([]string{"fault", "set", "--kind", "error", "--api", "Produce"}, admin...)...)
	if err == nil || !strings.Contains(out, "needs") && !strings.Contains(out, "error code") {
		t.Fatalf("an error fault without its code: %v\n%s", err, out)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
