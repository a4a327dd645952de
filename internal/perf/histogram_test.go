package perf

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHistogramPercentiles(t *testing.T) {
	var h histogram
	for i := 1; i <= 10000; i++ {
		h.Record(time.Duration(i) * time.Microsecond) // 1 µs … 10 ms, uniform
	}
	s := h.Summary()
	near := func(got, want float64) bool { return got > want*0.96 && got < want*1.04 }
	if s.Count != 10000 || !near(s.P50, 5) || !near(s.P99, 9.9) || !near(s.P999, 9.99) || s.Max != 10 || !near(s.Mean, 5) {
		t.Errorf("%+v", s)
	}
	for us := uint64(0); us < 1<<40; us = us*2 + 1 {
		if v := bucketValue(bucketOf(us)); float64(v) < float64(us)*0.96 || float64(v) > float64(us)*1.04+1 {
			t.Errorf("bucket of %d µs reads %d", us, v)
		}
	}
}
