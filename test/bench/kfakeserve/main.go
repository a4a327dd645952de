// Command kfakeserve runs franz-go's kfake as a process of its own, so the
// benchmark can read its RSS the same way as minibroker serve's. It prints
// its listen address on stdout and runs until stdin closes or a signal.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	dataDir := flag.String("data-dir", "", "kfake DataDir (persistence); empty: in memory")
	flag.Parse()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
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
