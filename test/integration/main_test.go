// Package integration drives real minibroker brokers (in-process through
// minibrokertest, and the built binary) with real Kafka clients over TCP.
package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	if code == 0 {
		if err := goleak.Find(leakOptions...); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var leakOptions = []goleak.Option{
	// sarama and kafka-go keep package-level goroutines.
	goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
	goleak.IgnoreTopFunction("github.com/segmentio/kafka-go.(*connPool).discover"),
	goleak.IgnoreAnyFunction("github.com/segmentio/kafka-go.(*Transport).RoundTrip"),
}
