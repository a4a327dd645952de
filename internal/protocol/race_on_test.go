//go:build race

package protocol

// raceEnabled: the race detector's shadow memory makes RSS meaningless.
const raceEnabled = true
