package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The growth rule on scripted curves: a flat lifetime passes, a lifetime
// whose goroutines, RSS or fds keep climbing fails, a lifetime too short
// to judge is only reported, and a fresh lifetime starting with far more
// goroutines than the first fails.
func TestCurveGrowthRule(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type lifetime struct {
		samples     int
		goroutines  func(i int) int64
		rssKiB, fds func(i int) int64
	}
	flat := func(v int64) func(int) int64 { return func(int) int64 { return v } }
	climb := func(from, step int64) func(int) int64 { return func(i int) int64 { return from + int64(i)*step } }
	for _, tc := range []struct {
		name      string
		lifetimes []lifetime
		want      []string // substrings of the expected violations, in order
	}{
		{"flat", []lifetime{{20, flat(100), flat(30 << 10), flat(60)}}, nil},
		{"goroutine leak", []lifetime{{20, climb(100, 10), flat(30 << 10), flat(60)}}, []string{"lifetime 1: goroutines grew"}},
		{"rss leak", []lifetime{{20, flat(100), climb(30<<10, 4<<10), flat(60)}}, []string{"lifetime 1: RSS grew"}},
		{"fd leak", []lifetime{{20, flat(100), flat(30 << 10), climb(60, 10)}}, []string{"lifetime 1: open fds grew"}},
		{"short lifetime not judged", []lifetime{{8, climb(100, 100), flat(30 << 10), flat(60)}}, nil},
		{"carried over", []lifetime{{20, flat(100), flat(30 << 10), flat(60)}, {20, flat(400), flat(30 << 10), flat(60)}},
			[]string{"lifetime 2 starts with 400 goroutines"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newCurve(filepath.Join(t.TempDir(), "curve.csv"), t0)
			if err != nil {
				t.Fatal(err)
			}
			defer c.close()
			at := t0
			for n, lt := range tc.lifetimes {
				c.lifetimeStarted(n+1, at)
				for i := range lt.samples {
					at = at.Add(10 * time.Second)
					c.add(sample{at: at, lifetime: n + 1, pid: 1, goroutines: lt.goroutines(i), rssKiB: lt.rssKiB(i), openFDs: lt.fds(i)})
				}
			}
			_, got := c.summarize()
			if len(got) != len(tc.want) {
				t.Fatalf("violations %q, want %d matching %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("violation %q, want one containing %q", got[i], w)
				}
			}
		})
	}
}
