// Package integration drives real minibroker brokers (in-process through
// minibrokertest, and the built binary) with real Kafka clients over TCP.
package integration

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// sarama and kafka-go keep package-level goroutines.
		goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
		goleak.IgnoreTopFunction("github.com/segmentio/kafka-go.(*connPool).discover"),
		goleak.IgnoreAnyFunction("github.com/segmentio/kafka-go.(*Transport).RoundTrip"),
	)
}
