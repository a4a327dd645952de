// Command kfakeserve runs franz-go's kfake as a process of its own, so the
// benchmark drives it over loopback the way it drives `minibroker serve`,
// with a heap and a garbage collector of its own, and reads its RSS and
// CPU time from /proc. It prints its listen address on stdout and runs
// until stdin closes or a signal.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	dataDir := flag.String("data-dir", "", "kfake DataDir (persistence); empty: in memory")
	blackhole := flag.Bool("blackhole", false, "BlackholeProduce: acknowledge produced records and drop them (the store-nothing broker)")
	synthetic := flag.Int("synthetic-record-bytes", 0, "SyntheticFetch: answer every Fetch with copies of one uncompressed batch of values this size (the serve-canned broker)")
	flag.Parse()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	if *blackhole {
		opts = append(opts, kfake.BlackholeProduce())
	}
	if *synthetic > 0 {
		opts = append(opts, kfake.SyntheticFetch(kfake.SyntheticBatch{RecordBytes: *synthetic, Compression: kgo.NoCompression()}))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(c.ListenAddrs()[0])
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-done:
	case <-sig:
	}
	c.Close()
}
