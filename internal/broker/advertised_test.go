package broker

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/minibroker/minibroker/internal/config"
)

// The address a listener advertises: a wildcard one is refused with
// Kafka's message whether it is the listen address or the advertised
// one, an empty host is the host name, anything else is kept.
func TestAdvertisedAddress(t *testing.T) {
	hostname := func() (string, error) { return "broker7.example", nil }
	for _, tc := range []struct {
		adv, listen, bound string
		want               string // "" refused
	}{
		{"", "0.0.0.0:9092", "0.0.0.0:9092", ""},
		{"", "[::]:9092", "[::]:9092", ""},
		{"0.0.0.0:9092", "127.0.0.1:9092", "127.0.0.1:9092", ""},
		{"", ":9092", "[::]:9092", "broker7.example:9092"},
		{"", ":0", "[::]:40001", "broker7.example:40001"},
		{"", "127.0.0.1:0", "127.0.0.1:40002", "127.0.0.1:40002"},
		{"kafka.example:19092", "0.0.0.0:9092", "0.0.0.0:9092", "kafka.example:19092"},
	} {
		host, port, err := advertisedAddrWith(tc.adv, tc.listen, tc.bound, hostname)
		if tc.want == "" {
			if !errors.Is(err, errWildcardAdvertised) {
				t.Errorf("adv %q listen %q: %s:%d, %v; want refused", tc.adv, tc.listen, host, port, err)
			}
			continue
		}
		if err != nil || joinHostPort(host, port) != tc.want {
			t.Errorf("adv %q listen %q: %s:%d, %v; want %s", tc.adv, tc.listen, host, port, err, tc.want)
		}
	}
}

// A broker listening on 0.0.0.0 without an advertised address does not
// start, with Kafka's message; with one it starts and advertises it. An
// HTTP listener on every interface is warned about. (Before the rule,
// such a broker started and advertised 127.0.0.1, which sends every
// remote client to its own host.)
func TestWildcardListenRefused(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = t.TempDir(), "0.0.0.0:0", ""
	_, err := New(Options{Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "cannot use the nonroutable meta-address") ||
		!strings.Contains(err.Error(), "--advertised-listener") {
		t.Fatalf("New = %v, want Kafka's refusal naming --advertised-listener", err)
	}
	cfg.AdvertisedListener = "127.0.0.1:0"
	cfg.HTTPListen = "0.0.0.0:0"
	// An unauthenticated admin API on every interface is refused unless
	// the operator accepts it (httpauth.go); accepted, it is warned about.
	if _, err := New(Options{Config: cfg}); err == nil || !strings.Contains(err.Error(), "admin.allow.unauthenticated.remote") {
		t.Fatalf("New with an unauthenticated HTTP listener on 0.0.0.0 = %v, want the refusal naming admin.allow.unauthenticated.remote", err)
	}
	if err := cfg.Set("admin.allow.unauthenticated.remote", "true"); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	b, err := New(Options{Config: cfg, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	b.Serve()
	defer closeBroker(t, b)
	if got := logs.FilterMessageSnippet("HTTP admin API is served on every interface").Len(); got != 1 {
		t.Errorf("%d warnings about the HTTP listener, want 1", got)
	}
	if !strings.HasPrefix(b.Addr(), "127.0.0.1:") {
		t.Errorf("advertised %s", b.Addr())
	}
}

func joinHostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}
