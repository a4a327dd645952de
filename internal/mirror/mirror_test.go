package mirror_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/psm"
	"github.com/minibroker/minibroker/minibrokertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func produce(t *testing.T, addr, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func call(t *testing.T, method, url string, body any) (int, map[string]any) {
	t.Helper()
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, url, rd)
	// As the CLI: JSON, and the header a browser's cross-site form cannot send.
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Minibroker-Admin", "test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestAdminAPIErrors(t *testing.T) {
	src := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	c := minibrokertest.Start(t, minibrokertest.HTTP())
	base := "http://" + c.HTTPAddr() + "/v1/mirrors"
	cases := []struct {
		method, path string
		body         any
		want         int
	}{
		{"POST", "", `{"name":`, http.StatusBadRequest},
		{"POST", "", map[string]any{"name": "bad name!", "source": []string{src.Addr()}}, http.StatusBadRequest},
		{"POST", "", map[string]any{"name": "m"}, http.StatusBadRequest},
		{"POST", "", map[string]any{"name": "dead", "source": []string{"127.0.0.1:1"}}, http.StatusBadGateway},
		{"GET", "/dead", nil, http.StatusNotFound},
		{"POST", "", map[string]any{"name": "later", "source": []string{"127.0.0.1:1"}, "no_check": true}, http.StatusOK},
		{"DELETE", "/later", nil, http.StatusOK},
		{"POST", "", map[string]any{"name": "m", "source": []string{src.Addr()}}, http.StatusOK},
		{"POST", "", map[string]any{"name": "m", "source": []string{src.Addr()}}, http.StatusConflict},
		{"GET", "/nope", nil, http.StatusNotFound},
		{"POST", "/nope/start", map[string]any{"topics": []string{"orders"}}, http.StatusNotFound},
		{"POST", "/m/start", map[string]any{"topics": []string{}}, http.StatusBadRequest},
		{"POST", "/m/explode", map[string]any{"topics": []string{"orders"}}, http.StatusNotFound},
		{"POST", "/m/start", map[string]any{"topics": []string{"orders"}}, http.StatusOK},
		{"DELETE", "/m", nil, http.StatusConflict},
		{"POST", "/m/stop", map[string]any{"topics": []string{"ghost"}}, http.StatusNotFound},
		{"POST", "/m/stop", map[string]any{"topics": []string{}}, http.StatusBadRequest}, // never all by omission
		{"POST", "/m/stop", map[string]any{"topics": []string{"orders"}, "all_topics": true}, http.StatusBadRequest},
		{"POST", "/m/stop", map[string]any{"all_topics": true, "timeout_ms": -1}, http.StatusBadRequest},
		{"POST", "/m/pause", map[string]any{"topics": []string{"orders"}, "wait": true}, http.StatusBadRequest},
		{"POST", "/m/stop", map[string]any{"all_topics": true, "wait": true}, http.StatusOK},
		{"DELETE", "/m", nil, http.StatusOK},
	}
	for i, tc := range cases {
		code, body := call(t, tc.method, base+tc.path, tc.body)
		if code != tc.want {
			t.Fatalf("case %d %s %s: %d %v, want %d", i, tc.method, tc.path, code, body, tc.want)
		}
	}
}

// A paused mirror stays paused and read-only across a restart; resumed, it
// catches up.
func TestPausedStateSurvivesRestart(t *testing.T) {
	src := minibrokertest.Start(t, minibrokertest.Topic("orders", 2))
	produce(t, src.Addr(), "orders", 10)
	c := minibrokertest.Start(t)
	m := c.Mirror("m", src.Addr()).Start("orders")
	m.WaitCaughtUp(10 * time.Second)
	m.Pause()
	before := map[int32]int64{}
	for _, p := range m.Status().Partitions {
		before[p.Partition] = p.LocalLogEndOffset
	}
	produce(t, src.Addr(), "orders", 10)
	time.Sleep(100 * time.Millisecond) // a paused mirror must not fetch them
	c.Restart()
	st := m.Status()
	for _, p := range st.Partitions {
		if p.State != mirror.Paused || p.LocalLogEndOffset != before[p.Partition] {
			t.Fatalf("after restart: %+v", p)
		}
		part, _ := c.Broker().Partition("orders", p.Partition)
		if mode, owner := part.Mode(); mode != partition.Mirrored || owner != "m" {
			t.Fatal("paused partition writable after restart")
		}
	}
	m.Resume()
	m.WaitCaughtUp(10 * time.Second)
}

// A source that goes away is retried with backoff, counted, and mirrored
// from again when it comes back.
func TestSourceGoesAwayAndComesBack(t *testing.T) {
	src := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	produce(t, src.Addr(), "orders", 5)
	c := minibrokertest.Start(t)
	m := c.Mirror("m", src.Addr()).Start("orders")
	m.WaitCaughtUp(10 * time.Second)
	src.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for m.Status().Partitions[0].FetchErrors == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no fetch error counted with the source down")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := m.Status().Partitions[0]; st.State != mirror.Mirroring || st.LastError == "" || !st.SourceUnreachable {
		t.Fatalf("with the source down: %+v", st)
	}
	// The lag's age keeps growing while the source cannot be asked (it
	// stayed 0 before: the mirror was caught up when the source went).
	for deadline := time.Now().Add(10 * time.Second); m.Status().Partitions[0].LagMillis < 300; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("lag ms not growing with the source down: %+v", m.Status().Partitions[0])
		}
	}
	src.Revive()
	produce(t, src.Addr(), "orders", 5)
	m.WaitCaughtUp(20 * time.Second)
	// Recovered: the error note goes (the count stays), the lag is 0 again.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st := m.Status().Partitions[0]
		if st.LastError == "" && !st.SourceUnreachable && st.LagRecords == 0 && st.LagMillis == 0 && st.FetchErrors > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the source recovered: %+v", st)
		}
	}
	if end := m.Status().Partitions[0].LocalLogEndOffset; end != 10 {
		t.Fatalf("local end %d, want 10", end)
	}
}

// local is a Local made of real partitions on disk, so a Manager can be
// opened with options the broker does not expose.
type local struct {
	dir     string
	mu      sync.Mutex
	parts   map[string][]*partition.Partition
	configs map[string]map[string]string
	state   *partition.Partition // __mirror_state-0
}

// openManager opens a Manager on l, with __mirror_state a partition of
// l's directory on opts.FS, opened anew (as a broker's restart does).
func openManager(l *local, opts mirror.Options) (*mirror.Manager, error) {
	l.mu.Lock()
	if l.state != nil {
		l.state.Close()
	}
	p, err := partition.Open(filepath.Join(l.dir, mirror.StateTopicName+"-0"), mirror.StateTopicName, 0,
		partition.Config{Log: mlog.DefaultConfig(), Compacted: true}, partition.Options{FS: opts.FS})
	l.state = p
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	opts.StateTopic = mirror.PartitionStateTopic(p, func() (*partition.Partition, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.state.Close()
		p, err := partition.Open(filepath.Join(l.dir, mirror.StateTopicName+"-0"), mirror.StateTopicName, 0,
			partition.Config{Log: mlog.DefaultConfig(), Compacted: true}, partition.Options{FS: opts.FS})
		if err == nil {
			l.state = p
		}
		return p, err
	})
	return mirror.Open(l, l.dir, opts)
}

func (l *local) TopicConfigs(name string) (map[string]string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.parts[name] == nil {
		return nil, false
	}
	return maps.Clone(l.configs[name]), true
}

func (l *local) UpdateTopicConfigs(name string, set map[string]string, remove []string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.configs == nil {
		l.configs = map[string]map[string]string{}
	}
	if l.configs[name] == nil {
		l.configs[name] = map[string]string{}
	}
	maps.Copy(l.configs[name], set)
	for _, k := range remove {
		delete(l.configs[name], k)
	}
	return nil
}

func (l *local) ClusterID() string { return "local" }
func (l *local) Partitions(topic string) []*partition.Partition {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.parts[topic]
}
func (l *local) EnsureTopic(name string, n int32, _ map[string]string, _ [16]byte) ([]*partition.Partition, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := int32(len(l.parts[name])); i < n; i++ {
		p, err := partition.Open(filepath.Join(l.dir, fmt.Sprintf("%s-%d", name, i)), name, i,
			partition.Config{Log: mlog.DefaultConfig(), PSM: psm.Config{}}, partition.Options{})
		if err != nil {
			return nil, err
		}
		l.parts[name] = append(l.parts[name], p)
	}
	return l.parts[name], nil
}
func (l *local) close() {
	if l.state != nil {
		l.state.Close()
	}
	for _, ps := range l.parts {
		for _, p := range ps {
			p.Close()
		}
	}
}

// Partitions added at the source are picked up by the metadata loop.
func TestSourcePartitionsAddedArePickedUp(t *testing.T) {
	src := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	l := &local{dir: t.TempDir(), parts: map[string][]*partition.Partition{}}
	defer l.close()
	m, err := openManager(l, mirror.Options{MetadataInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Create("m", []string{src.Addr()}, ""); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context(), "m", []string{"orders"}); err != nil {
		t.Fatal(err)
	}
	cl, _ := kgo.NewClient(kgo.SeedBrokers(src.Addr()))
	defer cl.Close()
	if _, err := kadm.NewClient(cl).UpdatePartitions(context.Background(), 3, "orders"); err != nil {
		t.Fatal(err)
	}
	produce(t, src.Addr(), "orders", 9)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, _ := m.Describe("m")
		var total int64
		for _, p := range st.Partitions {
			if p.State == mirror.Mirroring {
				total += p.LocalLogEndOffset
			}
		}
		if len(st.Partitions) == 3 && total == 9 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("new partitions not mirrored: %+v", st.Partitions)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Once Pause returns, nothing more is appended, even while the
// partition's fetcher goroutine has not run yet: Pause itself takes the
// partition out of its broker loop. The hook holds that goroutine, as a
// busy scheduler can, while the loop's long poll is answered with a new
// record.
func TestPauseStopsAppendsBeforeItReturns(t *testing.T) {
	src := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	produce(t, src.Addr(), "orders", 5)
	l := &local{dir: t.TempDir(), parts: map[string][]*partition.Partition{}}
	defer l.close()
	release := make(chan struct{})
	m, err := openManager(l, mirror.WithTestHooks(mirror.Options{FetchMaxWait: 5 * time.Second},
		lateFetcher{release: release}))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock() // before Close, which waits for the fetcher
	if err := m.Create("m", []string{src.Addr()}, ""); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context(), "m", []string{"orders"}); err != nil {
		t.Fatal(err)
	}
	end := func() int64 { return l.Partitions("orders")[0].Offsets().LogEnd }
	for deadline := time.Now().Add(10 * time.Second); end() != 5; {
		if time.Now().After(deadline) {
			t.Fatalf("mirror at %d, want 5", end())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := m.Pause("m", nil); err != nil {
		t.Fatal(err)
	}
	produce(t, src.Addr(), "orders", 1) // answers the loop's long poll
	time.Sleep(500 * time.Millisecond)
	if got := end(); got != 5 {
		t.Fatalf("paused mirror appended: log end %d, want 5", got)
	}
	unblock()
	if err := m.Resume("m", nil); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); end() != 6; {
		if time.Now().After(deadline) {
			t.Fatalf("resumed mirror at %d, want 6", end())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lateFetcher blocks a woken fetcher until release is closed, standing for
// a goroutine the scheduler runs late.
type lateFetcher struct {
	mirror.NoTestHooks
	release chan struct{}
}

func (h lateFetcher) FetcherWoken(string, int32) { <-h.release }
