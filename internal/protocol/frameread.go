package protocol

import (
	"bufio"
	"encoding/binary"
	"io"
	"time"
)

// frameStep is the most a frame's first buffer holds: a frame is read
// into a buffer that grows as its bytes arrive, so a client that declares
// 100 MiB and sends 64 KiB holds 64 KiB, not 100 MiB.
const frameStep = 64 << 10

// frameSteps returns the size of a frame's first buffer: the frame's
// size halved until it is at most frameStep. Each later buffer doubles
// the last, the final one is exactly size, so growing holds at most
// size/2 + size at once.
func frameSteps(size int) int {
	first := size
	for first > frameStep {
		first = (first + 1) / 2
	}
	return first
}

// frameBuffer allocates a frame buffer of n bytes: from the shared pool
// for a Produce frame over 64 KiB (see frameFor), else from the heap. It
// returns the bytes the buffer really takes, which is what is reserved.
func frameBuffer(n int, pooled bool) []byte {
	if pooled {
		return getBuffer(n)[:n]
	}
	return make([]byte, n)
}

// frameCost is the capacity frameBuffer(n, pooled) allocates.
func frameCost(n int, pooled bool) int64 {
	if pooled && n > 1<<minPooledShift && n <= 1<<maxPooledShift {
		return int64(classSize(classAtLeast(n)))
	}
	return int64(n)
}

func dropFrameBuffer(b []byte, pooled bool) {
	if pooled {
		putBuffer(b)
	}
}

// readFrame reads a frame of size bytes (its size prefix already read)
// into a buffer that grows as bytes arrive, reserving each buffer in the
// server's request memory before allocating it. It returns the frame,
// whether it is pooled (a Produce frame, see frameFor) and the bytes
// reserved for it, which the caller releases once the frame is dropped.
// On an error nothing stays reserved.
func (c *conn) readFrame(br *bufio.Reader, size int32) (frame []byte, pooled bool, reserved int64, err error) {
	if size > 1<<minPooledShift {
		// The key is the frame's first two bytes; a failed peek leaves
		// the failure to the read that follows.
		if hdr, err := br.Peek(2); err == nil && int16(binary.BigEndian.Uint16(hdr)) == produceKey {
			pooled = true
		}
	}
	mem := c.s.mem
	n := frameSteps(int(size))
	if c.s.cfg.preallocateFrames {
		n = int(size)
	}
	cost := frameCost(n, pooled)
	waited, err := mem.reserve(c.ctx, c.stopped, cost, 0)
	if err != nil {
		return nil, false, 0, err
	}
	c.restartDeadline(waited)
	buf := frameBuffer(n, pooled)
	read := 0
	for {
		m, err := io.ReadFull(br, buf[read:n])
		read += m
		if err != nil {
			dropFrameBuffer(buf, pooled)
			mem.release(cost)
			return nil, false, 0, err
		}
		if n == int(size) {
			return buf, pooled, cost, nil
		}
		next := min(2*n, int(size))
		nextCost := frameCost(next, pooled)
		waited, err := mem.reserve(c.ctx, c.stopped, nextCost, cost)
		if err != nil {
			dropFrameBuffer(buf, pooled)
			mem.release(cost)
			return nil, false, 0, err
		}
		c.restartDeadline(waited)
		grown := frameBuffer(next, pooled)
		copy(grown, buf[:read])
		dropFrameBuffer(buf, pooled)
		mem.release(cost)
		buf, n, cost = grown, next, nextCost
	}
}

// restartDeadline gives a frame a new idle timeout after its reader
// waited for memory: the wait was the broker's, not the client's.
func (c *conn) restartDeadline(waited bool) {
	if waited && c.s.cfg.IdleTimeout > 0 {
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
	}
}
