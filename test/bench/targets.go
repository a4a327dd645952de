package main

import (
	"github.com/twmb/franz-go/pkg/kfake"

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
