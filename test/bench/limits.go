package main

import (
	"io"
	"net"
	"os"
	"time"
)

// runLimits measures loopback TCP and sequential disk write throughput,
// runs interleaved.
func runLimits(r *report) error {
	tcp := newRow("loopback TCP, one connection, 64 KiB writes for 1 s", "MB/s", true)
	disk := newRow("sequential write of "+itoa(r.opts.diskMB)+" MiB in 1 MiB writes + fsync, in the broker's temp dir", "MB/s", true)
	for range r.opts.runs {
		v, err := loopbackMBps(time.Second)
		if err != nil {
			return err
		}
		tcp.samples["limit"] = append(tcp.samples["limit"], v)
		v, err = diskMBps(r.opts.diskMB)
		if err != nil {
			return err
		}
		disk.samples["limit"] = append(disk.samples["limit"], v)
	}
	r.limits = append(r.limits, tcp, disk)
	return nil
}

func loopbackMBps(d time.Duration) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- 0
			return
		}
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		got <- n
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 64<<10)
	start := time.Now()
	for time.Since(start) < d {
		if _, err := c.Write(buf); err != nil {
			c.Close()
			return 0, err
		}
	}
	c.Close()
	n := <-got
	return float64(n) / (1 << 20) / time.Since(start).Seconds(), nil
}

func diskMBps(mb int) (float64, error) {
	f, err := os.CreateTemp("", "bench-disk-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	start := time.Now()
	for range mb {
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	return float64(mb) / time.Since(start).Seconds(), nil
}

func itoa(n int) string {
	b := []byte{}
	if n == 0 {
		return "0"
	}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
