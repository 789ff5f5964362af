package rtmp

import (
	"net"
	"syscall"
	"time"
)

// inflight tracks how much media the kernel still holds for the peer: bytes
// handed to the socket minus the bytes the kernel reports unsent (SIOCOUTQ),
// mapped back to the timestamps of the frames written. The writer stops
// feeding a connection whose in-flight media exceeds a limit, so the backlog
// of a slow viewer stays in the hub's queue, where the drop policy can act on
// it, instead of in socket buffers where nothing can be dropped.
type inflight struct {
	raw     syscall.RawConn
	outq    int // unsent + unacknowledged bytes
	notsent int // bytes the kernel has not even sent yet
	control func(fd uintptr)

	written uint64                     // bytes handed to the kernel
	batches [inflightBatches]batchMark // ring of the media batches in flight
	head, n int
	newest  uint32 // timestamp of the newest media frame written
	any     bool

	// The kernel is asked (two ioctls) at most every checkEvery while the
	// connection keeps up, unless more than the allowed unsent bytes were
	// written since; every time while it is backlogged.
	lastCheck  time.Time
	lastBusy   bool
	lastHeld   bool
	sinceCheck int // bytes written since the last check
	// lowat: the kernel itself refuses writes beyond the unsent limit
	// (TCP_NOTSENT_LOWAT), so only the media lag in flight is checked, and
	// only every checkEvery.
	lowat bool
}

const checkEvery = 100 * time.Millisecond

// checkEveryLowat is the same where the kernel enforces the unsent limit
// itself: only the media lag in flight is left to check, and the lag limit
// (MaxInflight, 500ms) is coarse anyway.
const checkEveryLowat = 400 * time.Millisecond

// inflightBatches is how many media batches in flight are told apart: a
// second and a half of 100 ms rounds, 250 ms of a small audience's rounds
// (more than MaxInflight is held back anyway; beyond, the newest batches
// are merged, which can only overstate the lag). Small, because every
// connection keeps the ring.
const inflightBatches = 16

type batchMark struct {
	end     uint64 // written offset after the batch
	firstTS uint32 // first media timestamp in the batch
}

func newInflight(nc net.Conn) *inflight {
	if !haveKernelQueue {
		return nil
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	f := &inflight{raw: raw}
	f.control = func(fd uintptr) { f.notsent, f.outq = kernelQueue(fd) }
	return f
}

// recheck makes the next backlogged call ask the kernel: the socket was
// short of space, or more media is about to follow a full batch.
func (f *inflight) recheck() { f.lastHeld = true }

// setNotSentLowat asks the kernel to refuse writes while more than n bytes
// are unsent (TCP_NOTSENT_LOWAT): a non-blocking writer then learns of a
// slow peer from a short write, without asking.
func (f *inflight) setNotSentLowat(n int) {
	var serr error
	err := f.raw.Control(func(fd uintptr) { serr = setNotSentLowat(fd, n) })
	f.lowat = err == nil && serr == nil
}

// wrote records a flushed batch of n bytes whose media frames span
// [firstTS, lastTS] (hasMedia false for control-only batches).
func (f *inflight) wrote(n int, hasMedia bool, firstTS, lastTS uint32) {
	f.written += uint64(n)
	f.sinceCheck += n
	if !hasMedia {
		return
	}
	if f.n == len(f.batches) {
		// Full: the newest mark takes this batch in (it keeps its first
		// timestamp, so the lag is not understated).
		f.batches[(f.head+f.n-1)%len(f.batches)].end = f.written
	} else {
		f.batches[(f.head+f.n)%len(f.batches)] = batchMark{end: f.written, firstTS: firstTS}
		f.n++
	}
	f.newest = lastTS
	f.any = true
}

// backlogged reports whether the writer should hold media back: the kernel
// has more than maxNotSent bytes it could not send yet (the peer or the path
// is slower than the stream), or more than maxLagMS of media in flight.
func (f *inflight) backlogged(now time.Time, maxNotSent int, maxLagMS int64) bool {
	if !f.any {
		return false
	}
	if !f.lastHeld {
		if f.lowat && now.Sub(f.lastCheck) < checkEveryLowat {
			return false
		}
		if !f.lowat && now.Sub(f.lastCheck) < checkEvery && !f.lastBusy && f.sinceCheck < maxNotSent {
			return false
		}
	}
	f.lastCheck, f.sinceCheck = now, 0
	if err := f.raw.Control(f.control); err != nil {
		return false
	}
	f.lastBusy = f.notsent > 0
	// All sent: what is in flight is up to the network.
	f.lastHeld = f.notsent > 0 && (f.notsent > maxNotSent || f.lagMS() > maxLagMS)
	return f.lastHeld
}

// lagMS is the media time between the frame the kernel is delivering now and
// the newest frame written (as of the last backlogged call).
func (f *inflight) lagMS() int64 {
	delivered := f.written - uint64(f.outq)
	for f.n > 0 && f.batches[f.head].end <= delivered {
		f.head = (f.head + 1) % len(f.batches)
		f.n--
	}
	if f.n == 0 {
		return 0
	}
	d := int32(f.newest - f.batches[f.head].firstTS)
	if d < 0 {
		return 0
	}
	return int64(d)
}
