package rtmp

import (
	"fmt"
	"time"
)

// The round write engine: a Flusher worker serves the connection in
// rounds with one non-blocking writev each (write_batch > 0).

// service is one round of a Flusher-driven connection. It never blocks: what
// the socket does not take stays pending in the chunk writer and goes first
// in the next round, and while anything is pending no new media or control
// message is taken, so a slow peer's backlog stays in the hub's queue (where
// the drop policy applies) and in the bounded control queue. It reports
// false once the connection is closed.
func (c *Conn) service(now time.Time) bool {
	if c.isDone.Load() {
		return false
	}
	c.retry = false
	c.burst.reset()
	if c.writer.Pending() > 0 {
		if !c.flushSome(now) {
			return false
		}
		if c.writer.Pending() > 0 {
			c.retry = true
			c.mu.Lock()
			binds := append(c.binds[:0], c.bindings...)
			c.mu.Unlock()
			for _, b := range binds {
				if err := b.src.Err(); err != nil && c.failed == nil {
					c.failed = err // told once the socket takes the rest
					c.failSource(b, err)
				}
			}
			clear(binds)
			return true
		}
		if c.failed != nil {
			c.Close(c.failed)
			return false
		}
	}
	// Gather and write until the socket is full, nothing is left, or a
	// round's share is used up.
	for range maxGathers {
		closeAfter, held, failed := c.gather(now)
		if failed != nil {
			c.failed = failed
		}
		if held {
			c.retry = true // the hub's queue is not polled until then
		}
		if c.writer.Pending() == 0 {
			if closeAfter || c.failed != nil {
				c.Close(c.failed)
				return false
			}
			return true
		}
		full := c.writer.Pending() >= c.pollBytes(now)/2 // the source may have more
		if !c.flushSome(now) {
			return false
		}
		if c.writer.Pending() == 0 && (c.failed != nil || closeAfter) {
			c.Close(c.failed)
			return false
		}
		if c.writer.Pending() > 0 {
			c.recheck() // the socket is full: ask the kernel before more media
			c.slowUntil = now.Add(time.Second)
			c.retry = true
			return true
		}
		if !full {
			return true
		}
	}
	c.wake() // more pending: serve again before the next round
	return true
}

func (c *Conn) recheck() {
	if c.inflight != nil {
		c.inflight.recheck()
	}
}

// maxGathers bounds how many batches one connection writes per round, so a
// fast stream cannot keep a worker from the other connections.
const maxGathers = 8

// flushSome writes what the socket takes now. A socket that took nothing for
// WriteTimeout closes the connection. It reports false when it closed it.
func (c *Conn) flushSome(now time.Time) bool {
	before := c.writer.Pending()
	c.rawErr = nil
	// Control, not Write: the write never waits for the socket (the next
	// round retries), so the poller's bookkeeping that Write does first is
	// of no use; Control holds the descriptor open for the call all the same.
	if err := c.raw.Control(c.rawWrite); err != nil && c.rawErr == nil {
		c.rawErr = err
	}
	if c.rawErr != nil {
		c.Close(fmt.Errorf("%w: %w", errWrite, c.rawErr))
		return false
	}
	if n := before - c.writer.Pending(); n > 0 {
		c.wrote(n)
		c.latencyWritten()
		c.stuckSince = time.Time{}
	} else if c.stuckSince.IsZero() {
		c.stuckSince = now
	} else if now.Sub(c.stuckSince) > c.cfg.WriteTimeout {
		c.cfg.Metrics.timedOut(timeoutWrite)
		err := fmt.Errorf("%w: %w: peer took nothing for %v", errWrite, ErrWriteTimeout, c.cfg.WriteTimeout)
		if c.failed != nil {
			// A source ended first (the hub gave up on a viewer that does
			// not read): that is why it goes; its status never got out.
			err = c.failed
		}
		c.Close(err)
		return false
	}
	return true
}

// doRawWrite is the body of raw.Control: one non-blocking attempt.
func (c *Conn) doRawWrite(fd uintptr) {
	_, c.rawErr = c.writer.FlushSome(int(fd))
}

// pollBytes bounds one batch of media. Whole batches go to the kernel, even
// past TCP_NOTSENT_LOWAT, which the kernel checks only between its packets,
// so the steps are small: 2 × MaxNotSent without the kernel's limit; with
// it, 4 × MaxNotSent (64 KiB: a whole 100 ms round of a stream up to
// 5 Mbit/s in one writev, where 32 KiB split a round of 2.65 Mbit/s with a
// keyframe in two), and a quarter of that for a socket found full lately (a
// slow peer): little sits where nothing can be dropped.
func (c *Conn) pollBytes(now time.Time) int {
	switch {
	case c.inflight == nil:
		return c.cfg.BatchBytes
	case !c.inflight.lowat:
		return 2 * c.cfg.MaxNotSent
	case now.Before(c.slowUntil):
		return max(c.cfg.MaxNotSent/2, 1)
	}
	return 4 * c.cfg.MaxNotSent
}
