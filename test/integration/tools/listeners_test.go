package tools

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// advertisedVia asks, over a raw connection to bound, for Metadata,
// FindCoordinator and DescribeCluster, and returns the broker address
// each answers with.
func advertisedVia(t *testing.T, bound string) (metadata, coordinator, cluster string) {
	t.Helper()
	c := itest.DialRaw(t, bound)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	c.Write(itest.RequestFrame(md, 1))
	mresp := kmsg.NewPtrMetadataResponse()
	mresp.Version = 12
	if err := mresp.ReadFrom(c.ReadResponse(1, true)); err != nil {
		t.Fatal(err)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version = 4
	fc.CoordinatorKeys = []string{"g"}
	c.Write(itest.RequestFrame(fc, 2))
	fresp := kmsg.NewPtrFindCoordinatorResponse()
	fresp.Version = 4
	if err := fresp.ReadFrom(c.ReadResponse(2, true)); err != nil {
		t.Fatal(err)
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.Version = 0
	c.Write(itest.RequestFrame(dc, 3))
	dresp := kmsg.NewPtrDescribeClusterResponse()
	dresp.Version = 0
	if err := dresp.ReadFrom(c.ReadResponse(3, true)); err != nil {
		t.Fatal(err)
	}
	if len(mresp.Brokers) != 1 || len(fresp.Coordinators) != 1 || len(dresp.Brokers) != 1 {
		t.Fatalf("brokers: metadata %d, coordinators %d, cluster %d", len(mresp.Brokers), len(fresp.Coordinators), len(dresp.Brokers))
	}
	join := func(h string, p int32) string { return net.JoinHostPort(h, strconv.Itoa(int(p))) }
	return join(mresp.Brokers[0].Host, mresp.Brokers[0].Port),
		join(fresp.Coordinators[0].Host, fresp.Coordinators[0].Port),
		join(dresp.Brokers[0].Host, dresp.Brokers[0].Port)
}

// TestListenersAdvertiseTheirOwnAddress: with two listeners, a client is
// told the advertised address of the listener it connected through, by
// Metadata, FindCoordinator and DescribeCluster (the docker case: one
// address for containers, one for the host). A listener left out of
// advertised.listeners advertises its bound address (port 0 there means
// the bound port).
func TestListenersAdvertiseTheirOwnAddress(t *testing.T) {
	c := minibrokertest.Start(t,
		minibrokertest.Set("listeners", "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0,OTHER://127.0.0.1:0"),
		minibrokertest.Set("listener.security.protocol.map", "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,OTHER:PLAINTEXT"),
		minibrokertest.Set("advertised.listeners", "INTERNAL://minibroker.internal:19092,EXTERNAL://localhost:0"),
	)
	ls := c.Broker().Listeners()
	if len(ls) != 3 {
		t.Fatalf("listeners: %+v", ls)
	}
	_, extPort, _ := net.SplitHostPort(ls[1].Bound)
	want := map[string]string{
		"INTERNAL": "minibroker.internal:19092",
		"EXTERNAL": net.JoinHostPort("localhost", extPort),
		"OTHER":    ls[2].Bound,
	}
	for _, l := range ls {
		m, f, d := advertisedVia(t, l.Bound)
		if m != want[l.Name] || f != want[l.Name] || d != want[l.Name] {
			t.Errorf("through %s (%s): metadata %s, coordinator %s, cluster %s; want %s", l.Name, l.Bound, m, f, d, want[l.Name])
		}
	}
	if got := c.ListenerAddr("external"); got != want["EXTERNAL"] {
		t.Errorf("ListenerAddr(external) = %s", got)
	}

	// A real client bootstrapped through EXTERNAL follows its advertised
	// address and produces and consumes.
	cl := itest.NewClient(t, ls[1].Bound, kgo.DefaultProduceTopic("via-external"), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics("via-external"))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil || fs.NumRecords() != 1 {
		t.Fatalf("consume: %v, %d records", err, fs.NumRecords())
	}

	// Restart keeps every listener on its port.
	c.Restart()
	if got := c.Broker().Listeners(); got[0].Bound != ls[0].Bound || got[1].Bound != ls[1].Bound || got[2].Bound != ls[2].Bound {
		t.Fatalf("after restart %+v, before %+v", got, ls)
	}
}

// TestListenersConfigErrors: bad listener settings refuse to start.
func TestListenersConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, listeners, protoMap, advertised string }{
		{"name not in map", "FOO://127.0.0.1:0", "", ""},
		{"advertised not a listener", "PLAINTEXT://127.0.0.1:0", "", "OTHER://h:1"},
		{"advertised meta-address", "PLAINTEXT://127.0.0.1:0", "", "PLAINTEXT://0.0.0.0:1"},
		{"same port twice", "PLAINTEXT://127.0.0.1:19999,SSL://127.0.0.1:19999", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []minibrokertest.Option{minibrokertest.Set("listeners", tc.listeners)}
			if tc.protoMap != "" {
				opts = append(opts, minibrokertest.Set("listener.security.protocol.map", tc.protoMap))
			}
			if tc.advertised != "" {
				opts = append(opts, minibrokertest.Set("advertised.listeners", tc.advertised))
			}
			if c, err := minibrokertest.StartE(t, opts...); err == nil {
				c.Close()
				t.Fatal("started")
			} else {
				t.Log(err)
			}
		})
	}
}
