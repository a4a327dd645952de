package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/internal/apisweep"
	"github.com/minibroker/minibroker/internal/config"
)

// TestNoPanicPropertyNegativeControl: the property the integration sweeps
// hold (TestEveryAdvertisedVersionRoundTrips, TestMutatedFramesNoPanic:
// no request makes a handler panic; minibrokertest fails any test whose
// broker's Defects are not empty), here with SASL and the authorizer on.
// With no fault the sweep passes and Defects is empty; with the
// DeleteTopics handler panicking on purpose (the unexported
// panicInHandler knob) the sweep fails at every DeleteTopics version and
// nowhere else, and Defects — minibroker_handler_panics_total in
// /metrics — reports the panics, so the check fails as it should.
func TestNoPanicPropertyNegativeControl(t *testing.T) {
	e := startAuthz(t, true, "group.initial.rebalance.delay.ms=0")
	e.createTopic("v", 0)
	target := apisweep.Target{Addr: e.addr, User: "admin", Password: "admin-secret",
		Names: apisweep.Names{Topic: "v", Absent: "absent", Group: "nc", TxnID: "nc-tx", NodeID: fmt.Sprint(e.b.nodeID)}}
	n, failures := apisweep.Sweep(target)
	if len(failures) > 0 || len(e.b.Defects()) > 0 || n < 100 {
		t.Fatalf("without a fault: %d answered, failures %q, defects %q", n, failures, e.b.Defects())
	}

	e.panicKey.Store(20)       // DeleteTopics
	target.Names.Group = "nc2" // new groups: the first sweep's members are still in theirs
	_, failures = apisweep.Sweep(target)
	versions := e.b.apis()[20]
	if want := int(versions.max - versions.min + 1); len(failures) != want {
		t.Errorf("with DeleteTopics panicking: %d sweep failures, want %d (one per version): %q", len(failures), want, failures)
	}
	for _, f := range failures {
		if !strings.HasPrefix(f, "DeleteTopics v") {
			t.Errorf("sweep failure outside DeleteTopics: %s", f)
		}
	}
	want := fmt.Sprintf("handler panics in DeleteTopics: %d", versions.max-versions.min+1)
	if d := e.b.Defects(); len(d) != 1 || d[0] != want {
		t.Errorf("Defects %q, want [%s]", d, want)
	}
}

// FuzzBrokerFrame sends a frame (any API, any version, any bytes) to a
// broker with SASL and the authorizer on, on a connection authenticated
// as bob, who has no ACL, and holds the property of the sweeps: no
// handler panics, no rule meets a request it cannot read (Defects
// empty). Seeds: every API at every version, filled as the sweep fills
// them. `go test -fuzz FuzzBrokerFrame ./internal/broker` explores.
func FuzzBrokerFrame(f *testing.F) {
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = f.TempDir(), "127.0.0.1:0", ""
	for _, kv := range []string{
		"listeners=SASL_PLAINTEXT://127.0.0.1:0",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + authzJAAS,
		"super.users=User:admin",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"group.initial.rebalance.delay.ms=0",
	} {
		if err := cfg.SetPair(kv); err != nil {
			f.Fatal(err)
		}
	}
	b, err := New(Options{Config: cfg})
	if err != nil {
		f.Fatal(err)
	}
	b.Serve()
	f.Cleanup(func() { b.Close(context.Background()) })
	if _, err := b.CreateTopic("v", 1, nil, [16]byte{}, false); err != nil {
		f.Fatal(err)
	}
	target := apisweep.Target{Addr: b.Listeners()[0].Advertised, User: "bob", Password: "bob-secret",
		Names: apisweep.Names{Topic: "v", Absent: "absent", Group: "fz", TxnID: "fz-tx", NodeID: fmt.Sprint(b.nodeID)}}
	frames, err := apisweep.Frames(target)
	if err != nil {
		f.Fatal(err)
	}
	for _, fr := range frames {
		f.Add(fr)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if err := apisweep.Send(target, frame); err != nil {
			t.Fatal(err)
		}
		if d := b.Defects(); len(d) > 0 {
			t.Fatalf("defects: %q", d)
		}
	})
}
