package itest

import (
	"context"
	"os"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Helpers shared by the benchmarks (acl_bench_test.go,
// security_bench_test.go, mirror_bench_test.go).

// ProduceAll produces n records of value to cl's default topic without
// waiting for each, then flushes: the first error of any, or nil once
// every record is acknowledged.
func ProduceAll(ctx context.Context, cl *kgo.Client, n int, value []byte) error {
	errs := make(chan error, 1)
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// EnvInt is the positive integer in the environment variable name, or def.
func EnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// Median of xs (the upper one of an even count; 0 for none).
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
