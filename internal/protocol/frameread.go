package protocol

import (
	"bufio"
	"encoding/binary"
	"io"
	"time"
)

// frameStep is the most a frame's first buffer holds: a frame larger
// than that is read into a buffer that grows as its bytes arrive, so a
// client that declares 100 MiB and sends 64 KiB holds at most 2 MiB, not
// 100 MiB. Frames up to frameStep (every Produce of a client at Kafka's
// default max.request.size of 1 MiB) are read into one buffer: growing
// costs a copy of what was read and more, smaller reads, and with a 64 KiB
// first step it raised the broker's CPU per MB producing 1 MiB batches by
// about a half (docs/OPTIMISATIONS.md).
const frameStep = 2 << 20

// frameGrowth is how much each buffer of a frame grows over the last.
// Every growth copies what was read, so a frame copies about
// 1/(frameGrowth-1) of its size on its way in. A stalled frame holds at
// most frameStep, or frameGrowth times what it sent.
const frameGrowth = 4

// frameSteps returns the size of a frame's first buffer: the frame's
// size divided by frameGrowth until it is at most frameStep. Each later
// buffer is frameGrowth times the last, the final one is exactly size, so
// growing holds at most size/frameGrowth + size at once.
func frameSteps(size int) int {
	first := size
	for first > frameStep {
		first = (first + frameGrowth - 1) / frameGrowth
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
	if c.s.cfg.private.preallocateFrames {
		n = int(size)
	}
	cost := frameCost(n, pooled)
	waited, err := mem.reserve(c.ctx, c.stopped, cost, 0)
	if err != nil {
		return nil, false, 0, err
	}
	c.restartDeadline(waited)
	buf := frameBuffer(n, pooled)
	var r io.Reader = br
	if size > readBufferSize {
		r = directReader{br: br, nc: c.nc}
	}
	read := 0
	for {
		m, err := io.ReadFull(r, buf[read:n])
		read += m
		if err != nil {
			dropFrameBuffer(buf, pooled)
			mem.release(cost)
			return nil, false, 0, err
		}
		if n == int(size) {
			return buf, pooled, cost, nil
		}
		next := min(frameGrowth*n, int(size))
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

// directReader reads a large frame from the socket into the frame's
// buffer, after the bytes the bufio.Reader already holds: bufio copies
// through its own buffer every read shorter than that buffer, and a
// frame read in growing steps makes many such reads (with the steps, a
// sixth of the broker's CPU producing 1 MiB batches went to that copy).
// The bufio.Reader is left empty at the frame's end, as it would be after
// a read of the whole frame, so the next size prefix is read through it.
type directReader struct {
	br *bufio.Reader
	nc io.Reader
}

func (d directReader) Read(p []byte) (int, error) {
	if d.br.Buffered() > 0 {
		return d.br.Read(p)
	}
	return d.nc.Read(p)
}

// restartDeadline gives a frame a new idle timeout after its reader
// waited for memory: the wait was the broker's, not the client's.
func (c *conn) restartDeadline(waited bool) {
	if waited && c.s.cfg.IdleTimeout > 0 {
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
	}
}
