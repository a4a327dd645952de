package itest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// Main is every integration package's TestMain: it runs the tests, removes
// the binary StartBinary built, and fails the run if a goroutine outlived
// the tests (brokers, clients and mirrors must all be closed).
func Main(m *testing.M) {
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
