package clients

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/minibroker/minibroker/internal/broker"
	"github.com/minibroker/minibroker/internal/config"
)

// Which versions current clients send, and whether minibroker serves them.
//
// Each client below runs a representative workload (metadata, plain and
// idempotent produce, transactions with offsets, a consumer group that
// commits, list offsets, admin calls) through a recording proxy that logs
// the API key and version of every request header. Every version sent
// must be accepted (no connection closed for an unsupported version), and
// for every API a client sends, the highest version it would use with
// Apache Kafka — taken from its source, cited below — must be advertised
// by minibroker, unless listed in versionExceptions with the reason.
// Because the clients negotiate (kgo and librdkafka take the lower of
// their maximum and the broker's; sarama restricts its chosen version to
// the broker's range, api_versions.go restrictApiVersion), what is
// recorded must also equal min(client maximum, advertised): that checks
// the tables against what the clients really do.

// versionExceptions are the APIs whose newest versions minibroker does not
// serve although a client would use them with Kafka; the client then
// negotiates minibroker's highest. Key → reason.
var versionExceptions = map[int16]string{
	0:  "Produce v13 names topics by id (KIP-516): not served, clients send v12",
	2:  "ListOffsets v11 adds -6, earliest pending upload (KIP-1023, tiered storage): not served, v10 is",
	8:  "OffsetCommit v10 names topics by id instead of name: not served, v9 is",
	9:  "OffsetFetch v10 names topics by id instead of name: not served, v9 is",
	18: "ApiVersions is negotiated by downgrade: v5 is answered UNSUPPORTED_VERSION with ApiVersions' own range (as Kafka 2.4+ answers a version it does not know, KIP-511) and the client retries at v4",
	28: "TxnOffsetCommit v6 names topics by id: not served, v5 is",
	35: "DescribeLogDirs v5 adds IsCordoned (KIP-1066, cordoned log directories): not served, v4 is",
	66: "ListTransactions v2 filters by a transactional-id regular expression (KIP-1152): not served, v1 is",
}

// kgoMaxVersion is what kgo (franz-go v1.22.3, kmsg v1.15.1) sends to a
// broker that advertises everything: the lower of kmsg's MaxVersion and
// kgo's default MaxVersions, kversion.Stable() (kgo/config.go:
// maxVersions: kversion.Stable(); kgo/broker.go handleReq takes the
// minimum with the broker's). Produce is capped by kgo/sink.go createReq
// (produceMax 13; 11 for a transactional producer without KIP-890 part 2)
// and Fetch by kgo/source.go fetchRequest.MaxVersion (18).
func kgoMaxVersion(key int16) int16 {
	req := kmsg.RequestForKey(key)
	v := req.MaxVersion()
	if stable, ok := kversion.Stable().LookupMaxKeyVersion(key); ok {
		v = min(v, stable)
	}
	switch key {
	case 0:
		v = min(v, 13)
	case 1:
		v = min(v, 18)
	}
	return v
}

// saramaMax is the highest version sarama v1.61.1 builds at
// Config.Version = sarama.MaxVersion (V4_3_1_0, utils.go): each request's
// isValidVersion bound, e.g. produce_request.go (10), fetch_request.go
// (12), metadata_request.go (11), describe_cluster_request.go (2).
var saramaMax = map[int16]int16{
	0: 10, 1: 12, 2: 6, 3: 11, 8: 8, 9: 8, 10: 3, 11: 8, 12: 4, 13: 5, 14: 5, 15: 5, 16: 5,
	18: 4, 19: 7, 20: 6, 21: 2, 22: 4, 24: 3, 25: 3, 26: 3, 28: 3, 32: 4, 33: 2, 35: 4, 37: 3, 42: 2, 44: 1, 47: 0, 60: 2, 66: 1,
}

// librdkafkaMax is librdkafka's highest version per API, from its
// rd_kafka_broker_ApiVersion_supported calls (src/rdkafka_request.c,
// rdkafka_fetcher.c; Produce from rd_kafka_ProduceRequest_max_version in
// rdkafka_msgset_writer.c; ApiVersions from rd_kafka_ApiVersionRequest).
var librdkafkaMax = map[string]map[int16]int16{
	// v2.11.1, bundled with confluent-kafka-go v2.11.1.
	"2.11.1": {0: 10, 1: 16, 2: 7, 3: 13, 8: 9, 9: 9, 10: 2, 11: 5, 12: 3, 13: 1, 14: 3, 15: 4, 16: 5,
		18: 3, 19: 4, 20: 1, 21: 1, 22: 4, 23: 2, 24: 0, 25: 0, 26: 1, 28: 3, 32: 1, 33: 2, 37: 0, 42: 1, 44: 1, 47: 0,
		71: 0, 72: 0, // KIP-714 telemetry (rd_kafka_GetTelemetrySubscriptionsRequest, rd_kafka_PushTelemetryRequest: v0)
		// ConsumerGroupDescribe (rdkafka_admin.c's DescribeConsumerGroups
		// tries it first): v0, the version it sends while minibroker
		// offers v0-1.
		69: 0},
	// v2.0.2, Debian's kcat.
	"2.0.2": {0: 7, 1: 11, 2: 2, 3: 4, 8: 7, 9: 7, 10: 2, 11: 5, 12: 3, 13: 1, 14: 3, 15: 4, 16: 4,
		18: 3, 19: 4, 20: 1, 21: 1, 22: 4, 24: 0, 25: 0, 26: 1, 28: 3, 32: 1, 37: 0, 42: 1, 47: 0},
}

// recordingProxy forwards Kafka connections to a broker and records the
// API key and version of every request a client sends.
type recordingProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex // guards seen and conns
	seen  map[int16]map[int16]int
	conns []net.Conn
	wg    sync.WaitGroup
}

func newRecordingProxy(t *testing.T) *recordingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingProxy{ln: ln, seen: map[int16]map[int16]int{}}
	t.Cleanup(p.Close)
	return p
}

func (p *recordingProxy) serve(target string) {
	p.target = target
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			client, err := p.ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", p.target)
			if err != nil {
				client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() {
				defer p.wg.Done()
				p.forwardRequests(client, server)
				server.Close()
			}()
			go func() {
				defer p.wg.Done()
				io.Copy(client, server)
				client.Close()
			}()
		}
	}()
}

// forwardRequests copies size-prefixed frames from client to server,
// recording each header's key and version.
func (p *recordingProxy) forwardRequests(client, server net.Conn) {
	var size [4]byte
	for {
		if _, err := io.ReadFull(client, size[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(size[:])
		if n < 4 || n > 200<<20 {
			return
		}
		frame := make([]byte, 4+n)
		copy(frame, size[:])
		if _, err := io.ReadFull(client, frame[4:]); err != nil {
			return
		}
		key, version := int16(binary.BigEndian.Uint16(frame[4:])), int16(binary.BigEndian.Uint16(frame[6:]))
		p.mu.Lock()
		if p.seen[key] == nil {
			p.seen[key] = map[int16]int{}
		}
		p.seen[key][version]++
		p.mu.Unlock()
		if _, err := server.Write(frame); err != nil {
			return
		}
	}
}

func (p *recordingProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// recorded returns, per API key, the versions sent.
func (p *recordingProxy) recorded() map[int16][]int16 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int16][]int16{}
	for k, vs := range p.seen {
		for v := range vs {
			out[k] = append(out[k], v)
		}
		slices.Sort(out[k])
	}
	return out
}

// proxiedBroker is a broker whose advertised address is a recording
// proxy, so every connection a client makes (bootstrap, then the
// advertised broker and coordinator) goes through the proxy.
type proxiedBroker struct {
	b        *broker.Broker
	proxy    *recordingProxy
	registry *prometheus.Registry
}

func startProxiedBroker(t *testing.T) *proxiedBroker {
	t.Helper()
	proxy := newRecordingProxy(t)
	reg := prometheus.NewRegistry()
	b := itest.StartBroker(t, itest.BrokerOptions{
		Config:   func(cfg *config.Config) { cfg.AdvertisedListener = proxy.ln.Addr().String() },
		Registry: reg,
	}).B
	proxy.serve(b.ListenAddr())
	return &proxiedBroker{b: b, proxy: proxy, registry: reg}
}

func (pb *proxiedBroker) addr() string { return pb.proxy.ln.Addr().String() }

// closedOnError sums minibroker_connections_closed_on_error_total for a
// reason.
func (pb *proxiedBroker) closedOnError(t *testing.T, reason string) float64 {
	t.Helper()
	mfs, err := pb.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != "minibroker_connections_closed_on_error_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// checkClientVersions asserts what is described at the top of the file
// and returns the table rows for the log.
func checkClientVersions(t *testing.T, pb *proxiedBroker, client string, clientMax func(int16) (int16, bool)) {
	t.Helper()
	if n := pb.closedOnError(t, "decode"); n > 0 {
		t.Errorf("%s: %v connections closed on a request minibroker does not serve", client, n)
	}
	var rows []string
	rec := pb.proxy.recorded()
	keys := make([]int16, 0, len(rec))
	for k := range rec {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		sent := rec[key]
		minV, advertised, served := pb.b.VersionRange(key)
		name := kmsg.NameForKey(key)
		cmax, known := clientMax(key)
		if !known {
			t.Errorf("%s sent %s %v: no maximum known for it; add it to the table from the client's source", client, name, sent)
			continue
		}
		if !served {
			t.Errorf("%s sent %s %v, which minibroker does not serve", client, name, sent)
			continue
		}
		top := sent[len(sent)-1]
		note := ""
		switch reason, excepted := versionExceptions[key]; {
		case cmax > advertised && !excepted:
			t.Errorf("%s would send %s v%d to Kafka; minibroker advertises v%d–v%d and no exception says why", client, name, cmax, minV, advertised)
		case cmax > advertised:
			note = "  (exception: " + reason + ")"
		}
		if want := min(cmax, advertised); top != want && key != 18 {
			t.Errorf("%s sent %s up to v%d, want min(client v%d, minibroker v%d) = v%d: the table is wrong", client, name, top, cmax, advertised, want)
		}
		if key == 18 && top > advertised {
			// Negotiation: the version above was answered
			// UNSUPPORTED_VERSION and retried lower.
			if !slices.Contains(sent, advertised) {
				t.Errorf("%s: ApiVersions %v, no retry at v%d", client, sent, advertised)
			}
		}
		rows = append(rows, fmt.Sprintf("%-22s client max v%-2d minibroker v%d–v%-2d sent %v%s", name, cmax, minV, advertised, sent, note))
	}
	t.Logf("%s sent %d APIs:\n  %s", client, len(keys), strings.Join(rows, "\n  "))
}

// The exceptions are honest: each names a version some client would use
// and minibroker does not advertise.
func TestVersionExceptionsAreNeeded(t *testing.T) {
	t.Parallel()
	c := startProxiedBroker(t)
	for key, reason := range versionExceptions {
		_, advertised, _ := c.b.VersionRange(key)
		needed := kgoMaxVersion(key) > advertised
		if m, ok := saramaMax[key]; ok && m > advertised {
			needed = true
		}
		for _, table := range librdkafkaMax {
			if m, ok := table[key]; ok && m > advertised {
				needed = true
			}
		}
		if !needed {
			t.Errorf("exception for %s (%s) is stale: every client's maximum is served", kmsg.NameForKey(key), reason)
		}
	}
}

func TestClientVersionsKgo(t *testing.T) {
	t.Parallel()
	pb := startProxiedBroker(t)
	kgoWorkload(t, pb.addr())
	checkClientVersions(t, pb, "kgo", func(k int16) (int16, bool) {
		return kgoMaxVersion(k), kmsg.RequestForKey(k) != nil
	})
}

func TestClientVersionsSarama(t *testing.T) {
	t.Parallel()
	pb := startProxiedBroker(t)
	saramaWorkload(t, pb.addr())
	checkClientVersions(t, pb, "sarama", func(k int16) (int16, bool) { v, ok := saramaMax[k]; return v, ok })
}

func TestClientVersionsLibrdkafka(t *testing.T) {
	t.Parallel()
	pb := startProxiedBroker(t)
	confluentWorkload(t, pb.addr())
	table := librdkafkaMax["2.11.1"]
	checkClientVersions(t, pb, "librdkafka 2.11.1 (confluent-kafka-go)", func(k int16) (int16, bool) { v, ok := table[k]; return v, ok })
}

func TestClientVersionsKcat(t *testing.T) {
	t.Parallel()
	version := itest.LibrdkafkaVersion(t)
	table, ok := librdkafkaMax[version]
	if !ok {
		known := make([]string, 0, len(librdkafkaMax))
		for v := range librdkafkaMax {
			known = append(known, v)
		}
		sort.Strings(known)
		t.Fatalf("kcat links librdkafka %s; the table knows %v: add its maxima", version, known)
	}
	pb := startProxiedBroker(t)
	kcatWorkload(t, pb.addr())
	checkClientVersions(t, pb, "librdkafka "+version+" (kcat)", func(k int16) (int16, bool) { v, ok := table[k]; return v, ok })
}
