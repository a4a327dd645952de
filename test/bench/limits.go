package main

import (
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// runLimits measures loopback TCP, sequential disk write and page-cache
// write throughput, runs interleaved.
func runLimits(r *report) error {
	tcp := newRow("loopback TCP, one connection, 64 KiB writes for 1 s", "MB/s", true)
	disk := newRow("sequential write of "+strconv.Itoa(r.opts.diskMB)+" MiB in 1 MiB writes + fsync, in the broker's temp dir", "MB/s", true)
	cache := newRow("page-cache write: 1 MiB writes to a new file for "+r.opts.duration.String()+" (a produce run's length), no fsync", "MB/s", true)
	cacheCPU := newRow("CPU per MB of that page-cache write", "ms/MB", false)
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
		v, ms, err := pageCacheMBps(r.opts.duration)
		if err != nil {
			return err
		}
		cache.samples["limit"] = append(cache.samples["limit"], v)
		cacheCPU.samples["limit"] = append(cacheCPU.samples["limit"], ms)
	}
	r.limits = append(r.limits, tcp, disk, cache, cacheCPU)
	return nil
}

// pageCacheMBps writes a new file for d without syncing it: the rate at
// which the kernel hands out page-cache pages, which a broker storing
// produce requests pays before each acknowledgement (acks=all with Kafka's
// default flush policy). It returns MB/s and the process CPU per MB; on a
// VM, pages the guest has not touched before cost far more than reused
// ones, and each bench run writes into new pages.
func pageCacheMBps(d time.Duration) (mbps, cpuMsPerMB float64, err error) {
	f, err := os.CreateTemp("", "bench-cache-")
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	cpu0, start := cpuTime(), time.Now()
	mb := 0
	for time.Since(start) < d {
		if _, err := f.Write(buf); err != nil {
			return 0, 0, err
		}
		mb++
	}
	el, cpu := time.Since(start), cpuTime()-cpu0
	return float64(mb) / el.Seconds(), float64(cpu.Milliseconds()) / float64(mb), nil
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

// diskMBps writes mb MiB in 1 MiB writes to a new file, then fsyncs it:
// MiB/s over the whole time.
func diskMBps(mb int) (float64, error) {
	return writeAndSync(false, func(n int, _ time.Duration) bool { return n < mb })
}

// sustainedDiskMBps writes 1 MiB writes to a new file for d (a produce
// run's length: as many bytes as a storing broker could be asked to take
// in a run), then fsyncs it, and returns MiB/s over the whole time, the
// fsync included: the disk's sustained write, where diskMBps's short
// write may measure only a cache in front of the disk. The writes are
// O_DIRECT (where the file system takes them; buffered elsewhere), so
// this is the device's rate: a buffered writer also pays for the page
// cache's pages, which on a virtual machine that hands free memory back
// to its host cost more than the disk (OPTIMISATIONS.md, "Produce at the
// store-nothing limit"), and that cost is the storing broker's, not the
// disk's.
func sustainedDiskMBps(d time.Duration) (float64, error) {
	return writeAndSync(true, func(_ int, elapsed time.Duration) bool { return elapsed < d })
}

// writeAndSync writes 1 MiB writes to a new temp file while more(MiB
// written, time so far) holds, then fsyncs it, and returns MiB/s over the
// whole time, the fsync included. direct: O_DIRECT where the file system
// takes it.
func writeAndSync(direct bool, more func(mb int, elapsed time.Duration) bool) (float64, error) {
	f, err := os.CreateTemp("", "bench-disk-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if direct {
		if df, err := os.OpenFile(f.Name(), os.O_WRONLY|syscall.O_DIRECT, 0); err == nil {
			defer df.Close()
			f = df
		}
	}
	// O_DIRECT wants the buffer aligned to the device's blocks.
	const align = 4096
	raw := make([]byte, 1<<20+align)
	skip := (align - int(uintptr(unsafe.Pointer(&raw[0]))%align)) % align
	buf := raw[skip : skip+1<<20]
	for i := range buf {
		buf[i] = byte(i)
	}
	start := time.Now()
	mb := 0
	for more(mb, time.Since(start)) {
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
		mb++
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	return float64(mb) / time.Since(start).Seconds(), nil
}
