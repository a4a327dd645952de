package security

// knobs are the package's test seams, one unexported struct in the manner
// of pebble's Options.private (carried in SASLServer.knobs): set only by
// this package's negative-control tests; the zero value is what
// production runs.
type knobs struct {
	// refuseLibrdkafkaNonce turns off finalLibrdkafka, the allowance for
	// librdkafka's client-final nonce, to show librdkafka 2.0's SCRAM
	// failing without it.
	refuseLibrdkafkaNonce bool
}
