package main

import (
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// A target is a broker started in this process.
type target struct {
	name  string
	start func(opts ...kfake.Opt) (addr string, stop func(), err error)
}

var (
	minibroker = target{"minibroker", func(...kfake.Opt) (string, func(), error) {
		c, err := minibrokertest.New()
		if err != nil {
			return "", nil, err
		}
		return c.Addr(), c.Close, nil
	}}
	kfakeT = target{"kfake", func(extra ...kfake.Opt) (string, func(), error) {
		c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, extra...)...)
		if err != nil {
			return "", nil, err
		}
		return c.ListenAddrs()[0], c.Close, nil
	}}
	// storeNothing is kfake dropping every produced record: the upper
	// bound for produce through kgo on this machine.
	storeNothing = target{"store-nothing", func(extra ...kfake.Opt) (string, func(), error) {
		return kfakeT.start(append(extra, kfake.BlackholeProduce())...)
	}}
)

// cannedName is the consume bound: a broker that stores nothing and answers
// every Fetch with copies of one record batch held in memory.
const cannedName = "serve-canned"

// serveCanned is kfake with SyntheticFetch: each Fetch is answered with
// copies of one uncompressed batch of size-byte values (1 MiB of them), so
// its records/s is the most any broker could give this consumer on this
// machine.
func serveCanned(size int) target {
	return target{cannedName, func(extra ...kfake.Opt) (string, func(), error) {
		batch := kfake.SyntheticBatch{RecordBytes: size, Compression: kgo.NoCompression()}
		return kfakeT.start(append(extra, kfake.BlackholeProduce(), kfake.SyntheticFetch(batch))...)
	}}
}
