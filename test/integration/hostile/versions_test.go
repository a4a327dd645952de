package hostile

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/minibroker/minibroker/internal/apisweep"
	"github.com/minibroker/minibroker/minibrokertest"
)

// sweepTargets are the ways the sweeps reach a broker: PLAINTEXT with no
// authorizer, and SASL PLAIN with the authorizer on, as the super user
// (every rule reads its request and allows) and as bob, who has no ACL
// (every rule reads its request and denies). Each is a broker of its
// own, with HTTP for /metrics.
func sweepTargets(t *testing.T, extra ...minibrokertest.Option) (map[string]apisweep.Target, []*minibrokertest.Cluster) {
	t.Helper()
	names := func(c *minibrokertest.Cluster, who string) apisweep.Names {
		tp, _ := c.Broker().Topic("v")
		return apisweep.Names{Topic: "v", Absent: "absent", Group: "sweep-" + who, TxnID: "sweep-tx-" + who,
			NodeID: "1", TopicID: tp.ID}
	}
	opts := append([]minibrokertest.Option{minibrokertest.Topic("v", 1), minibrokertest.HTTP()}, extra...)
	off := minibrokertest.Start(t, opts...)
	on := itest.AclBroker(t, true, opts...)
	sasl := on.ListenerAddr("SASL_PLAINTEXT")
	return map[string]apisweep.Target{
		"authorizer off":                       {Addr: off.Addr(), Names: names(off, "off")},
		"SASL, authorizer on, super user":      {Addr: sasl, User: "admin", Password: "admin-secret", Names: names(on, "admin")},
		"SASL, authorizer on, no ACL (denied)": {Addr: sasl, User: "bob", Password: "bob-secret", Names: names(on, "bob")},
	}, []*minibrokertest.Cluster{off, on}
}

// noDefects fails the test when a broker's /metrics shows a recovered
// handler panic or a request an authorization rule could not read (any
// series of minibroker_handler_panics_total or
// minibroker_authz_rule_unreadable_total above 0, or
// minibroker_request_panics_total above 0).
func noDefects(t *testing.T, clusters ...*minibrokertest.Cluster) {
	t.Helper()
	for _, c := range clusters {
		resp, err := http.Get("http://" + c.HTTPAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			for _, series := range []string{"minibroker_handler_panics_total", "minibroker_authz_rule_unreadable_total", "minibroker_request_panics_total"} {
				if strings.HasPrefix(line, series) && !strings.HasSuffix(line, " 0") {
					t.Errorf("broker %s: %s", c.Addr(), line)
				}
			}
		}
	}
}

// TestEveryAdvertisedVersionRoundTrips sends a request at every version
// of every API the broker advertises in ApiVersions, over a raw
// connection, filled with a topic, a group and a transactional id
// (apisweep.Fill), and decodes the response at that version: nothing
// advertised is left unserved, every answer is well formed, and no
// handler panics — with the authorizer off, and with SASL and the
// authorizer on as a principal that may do everything and as one that
// may do nothing. The brokers' /metrics then show no recovered panic and
// no request a rule could not read (negative control: internal/broker
// TestNoPanicPropertyNegativeControl, a handler panicking on purpose).
func TestEveryAdvertisedVersionRoundTrips(t *testing.T) {
	t.Parallel()
	sweepEveryVersion(t)
}

// The same with client.protocol.version=3.9: Kafka 3.9's ranges, the
// versions KIP-896 removed included (Produce v0–v2, Fetch v0–v3,
// ListOffsets v0, CreateTopics v0–v1, …), each answered well formed,
// with the authorizer off and on.
func TestEveryAdvertisedVersionRoundTripsKafka39(t *testing.T) {
	t.Parallel()
	sweepEveryVersion(t, minibrokertest.Set("client.protocol.version", "3.9"))
}

func sweepEveryVersion(t *testing.T, extra ...minibrokertest.Option) {
	targets, clusters := sweepTargets(t, extra...)
	for name, target := range targets {
		n, failures := apisweep.Sweep(target)
		for _, f := range failures {
			t.Errorf("%s: %s", name, f)
		}
		if n < 100 {
			t.Errorf("%s: only %d API versions answered", name, n)
		}
		t.Logf("%s: %d API versions round-tripped", name, n)
	}
	noDefects(t, clusters...)
}

// TestMutatedFramesNoPanic sends every advertised API at every version,
// filled as in the sweep, with its body changed eight ways a frame
// (bytes flipped, 0xff or 0x00 lengths, cut short, lengthened), under
// the same three targets: whatever the broker answers or closes, no
// handler panics, no rule meets a request it cannot read, and a good
// client is served after.
func TestMutatedFramesNoPanic(t *testing.T) {
	t.Parallel()
	targets, clusters := sweepTargets(t)
	for name, target := range targets {
		sent, err := apisweep.Mutate(target, 39, 8)
		if err != nil {
			t.Errorf("%s: %v (after %d frames)", name, err, sent)
		}
		t.Logf("%s: %d mutated frames", name, sent)
	}
	noDefects(t, clusters...)
	stillServes(t, clusters[0].Addr())
}
