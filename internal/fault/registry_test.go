package fault

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func key(k int16) *int16  { return &k }
func part(p int32) *int32 { return &p }

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		bad  string // "" = valid
	}{
		{Spec{Kind: Error, APIKey: key(0), ErrorCode: 6}, ""},
		{Spec{Kind: Error, APIKey: key(0)}, "not a Kafka error"},
		{Spec{Kind: Error, APIKey: key(0), ErrorCode: 30000}, "not a Kafka error"},
		{Spec{Kind: Error, ErrorCode: 6}, "needs an API key"},
		{Spec{Kind: Error, APIKey: key(999), ErrorCode: 6}, "unknown API key"},
		{Spec{Kind: Latency, LatencyMs: 0}, "latency"},
		{Spec{Kind: Latency, LatencyMs: 5}, ""},
		{Spec{Kind: Drop}, ""},
		{Spec{Kind: Drop, Partition: part(1)}, "needs its topic"},
		{Spec{Kind: Storage}, "needs a topic"},
		{Spec{Kind: Storage, Topic: "t", APIKey: key(1)}, "Produce only"},
		{Spec{Kind: MirrorThrottle}, "bytes_per_second"},
		{Spec{Kind: MirrorPause, Count: 1}, "mirror only"},
		{Spec{Kind: Drop, Mirror: "m"}, "request fault"},
		{Spec{Kind: Drop, Probability: 1}, "probability"},
		{Spec{Kind: Drop, Nth: -1}, "negative"},
		{Spec{Kind: "explode"}, "unknown kind"},
	} {
		err := tc.spec.Validate()
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%+v refused: %v", tc.spec, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%+v: %v, want an error about %q", tc.spec, err, tc.bad)
		}
	}
}

// fires sends n requests and returns, per request, whether the fault
// fired ('x') or not ('.').
func fires(r *Registry, n int, req Request) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if len(r.Match(req)) > 0 {
			b.WriteByte('x')
		} else {
			b.WriteByte('.')
		}
	}
	return b.String()
}

func TestNthAndCount(t *testing.T) {
	for _, tc := range []struct {
		nth, count int64
		want       string
	}{
		{0, 0, "xxxxxxxx"},
		{1, 1, "x......."},
		{3, 1, "..x....."},
		{3, 2, "..xx...."},
		{5, 0, "....xxxx"},
	} {
		r := NewRegistry(nil)
		st, err := r.Set(Spec{Kind: Drop, APIKey: key(0), Nth: tc.nth, Count: tc.count})
		if err != nil {
			t.Fatal(err)
		}
		if got := fires(r, 8, Request{APIKey: 0}); got != tc.want {
			t.Errorf("nth %d count %d: %s, want %s", tc.nth, tc.count, got, tc.want)
		}
		if tc.count > 0 && r.Active() {
			t.Errorf("nth %d count %d: still active once spent", tc.nth, tc.count)
		}
		if got, _ := r.Get(st.ID); tc.count > 0 && got.Fired != tc.count {
			t.Errorf("fired %d, want %d", got.Fired, tc.count)
		}
	}
}

// Requests of another API, or not naming the topic and partition, do not
// count toward Nth.
func TestMatchSelects(t *testing.T) {
	r := NewRegistry(nil)
	r.Set(Spec{Kind: Error, APIKey: key(0), ErrorCode: 6, Topic: "a", Partition: part(2), Nth: 2, Count: 1})
	names := func(topic string, p int32) func(string, int32) bool {
		return func(t string, q int32) bool { return t == topic && (q < 0 || q == p) }
	}
	seq := []Request{
		{APIKey: 1, Names: names("a", 2)}, // other API
		{APIKey: 0, Names: names("a", 1)}, // other partition
		{APIKey: 0, Names: names("b", 2)}, // other topic
		{APIKey: 0, Names: names("a", 2)}, // 1st match
		{APIKey: 0},                       // names nothing
		{APIKey: 0, Names: names("a", 2)}, // 2nd match: fires
		{APIKey: 0, Names: names("a", 2)}, // spent
	}
	var got strings.Builder
	for _, req := range seq {
		f := r.Match(req)
		if len(f) > 0 {
			if f[0].ErrorCode != 6 || f[0].Topic != "a" || f[0].Partition != 2 {
				t.Fatalf("fired %+v", f[0])
			}
			got.WriteByte('x')
		} else {
			got.WriteByte('.')
		}
	}
	if got.String() != ".....x." {
		t.Fatalf("%s, want .....x.", got.String())
	}
}

// The same seed fires on the same requests; another seed differs.
func TestSeedRepeats(t *testing.T) {
	run := func(seed uint64) string {
		r := NewRegistry(nil)
		r.Set(Spec{Kind: Drop, Probability: 0.3, Seed: seed})
		return fires(r, 64, Request{APIKey: 3})
	}
	a, b, c := run(7), run(7), run(8)
	if a != b {
		t.Fatalf("seed 7 gave\n%s\n%s", a, b)
	}
	if a == c {
		t.Fatalf("seeds 7 and 8 fired alike: %s", a)
	}
	if n := strings.Count(a, "x"); n < 5 || n > 35 {
		t.Fatalf("p=0.3 fired %d of 64", n)
	}
	// Without a seed one is drawn, and reported for repeating the run.
	r := NewRegistry(nil)
	st, _ := r.Set(Spec{Kind: Drop, Probability: 0.3})
	if st.Seed == 0 {
		t.Fatal("no seed reported")
	}
	if got, want := fires(r, 64, Request{APIKey: 3}), run(st.Seed); got != want {
		t.Fatalf("the reported seed does not repeat the run:\n%s\n%s", got, want)
	}
}

func TestClear(t *testing.T) {
	r := NewRegistry(nil)
	a, _ := r.Set(Spec{Kind: Drop})
	r.Set(Spec{Kind: Latency, LatencyMs: 1})
	if !r.Active() || len(r.List()) != 2 {
		t.Fatal("not set")
	}
	if err := r.Clear(a.ID); err != nil {
		t.Fatal(err)
	}
	if err := r.Clear(a.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second clear: %v", err)
	}
	if n := r.ClearAll(); n != 1 || r.Active() || len(r.List()) != 0 {
		t.Fatalf("clear all: %d, active %v", n, r.Active())
	}
	var nilReg *Registry
	if nilReg.Active() || nilReg.Match(Request{}) != nil {
		t.Fatal("a nil registry is active")
	}
}

func TestParseNames(t *testing.T) {
	for in, want := range map[string]int16{"Produce": 0, "heartbeat": 12, "10": 10} {
		if got, err := ParseAPI(in); err != nil || got != want {
			t.Errorf("ParseAPI(%q) = %d, %v", in, got, err)
		}
	}
	for in, want := range map[string]int16{"NOT_COORDINATOR": 16, "not_leader_or_follower": 6, "KAFKA_STORAGE_ERROR": 56, "-1": -1, "UNKNOWN_SERVER_ERROR": -1} {
		if got, err := ParseError(in); err != nil || got != want {
			t.Errorf("ParseError(%q) = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"Nope", "999"} {
		if _, err := ParseAPI(bad); err == nil {
			t.Errorf("ParseAPI(%q) accepted", bad)
		}
	}
	if _, err := ParseError("NO_SUCH_ERROR"); err == nil {
		t.Error("unknown error name accepted")
	}
}

// Every fault set is in the collector's output with its labels, until
// cleared.
func TestCollector(t *testing.T) {
	r := NewRegistry(nil)
	r.Set(Spec{Kind: Storage, Topic: "orders", Partition: part(2)})
	st, _ := r.Set(Spec{Kind: MirrorPause, Mirror: "from-a"})
	reg := prometheus.NewRegistry()
	reg.MustRegister(r.Collector())
	want := `
# HELP minibroker_fault_active A fault set on this broker: 1 while it can fire.
# TYPE minibroker_fault_active gauge
minibroker_fault_active{api="Produce",error="",id="1",kind="storage",mirror="",partition="2",topic="orders"} 1
minibroker_fault_active{api="",error="",id="2",kind="mirror-pause",mirror="from-a",partition="",topic=""} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "minibroker_fault_active"); err != nil {
		t.Fatal(err)
	}
	r.Clear(st.ID)
	if n, _ := testutil.GatherAndCount(reg, "minibroker_fault_active"); n != 1 {
		t.Fatalf("%d series after clearing one of two faults", n)
	}
}
