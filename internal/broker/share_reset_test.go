package broker

import (
	"testing"
	"time"
)

// by_duration's ISO-8601 durations as Java's Duration.parse reads them;
// negative and malformed ones are refused.
func TestShareResetDuration(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"by_duration:PT1H":          time.Hour,
		"by_duration:P1D":           24 * time.Hour,
		"by_duration:P1DT2H3M4.5S":  26*time.Hour + 3*time.Minute + 4500*time.Millisecond,
		"by_duration:PT0.25S":       250 * time.Millisecond,
		"by_duration:PT1,5S":        1500 * time.Millisecond,
		"by_duration:PT0S":          0,
		"by_duration:+PT2M":         2 * time.Minute,
		"by_duration:PT1H-30M":      30 * time.Minute,
		"by_duration:-PT-1H":        time.Hour,
		"by_duration:P0DT0H0M0.01S": 10 * time.Millisecond,
	} {
		got, ok := shareResetDuration(v)
		if !ok || got != want {
			t.Errorf("%s: %v %v, want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"by_duration:", "by_duration:P", "by_duration:PT", "by_duration:-PT1H", "by_duration:PT-1H",
		"by_duration:1H", "by_duration:PT1X", "latest", "by_duration:P1W", "by_duration:PT1H30M-2H"} {
		if d, ok := shareResetDuration(v); ok {
			t.Errorf("%s: accepted as %v", v, d)
		}
	}
}
