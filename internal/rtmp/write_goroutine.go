package rtmp

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// The goroutine write engine: one writer goroutine per connection with
// blocking writevs (write_batch: 0, client connections, RTMPS).

// startWriter hands the writes to the configured Flusher when the socket
// allows non-blocking writes, or starts a writer goroutine of its own.
func (c *Conn) startWriter() {
	if f := c.cfg.Flusher; f != nil && f.ctx.Err() == nil {
		if sc, ok := c.nc.(syscall.Conn); ok {
			if raw, err := sc.SyscallConn(); err == nil {
				c.raw = raw
				c.rawWrite = c.doRawWrite
				if c.inflight != nil {
					c.inflight.setNotSentLowat(c.cfg.MaxNotSent)
				}
				c.worker = f.attach(c)
				c.wake()
				return
			}
		}
	}
	go c.writeLoop()
}

// writeLoop is the only writer of the socket when no Flusher drives the
// connection: it waits for work, gathers media for WriteBatch, and writes
// with blocking writevs.
func (c *Conn) writeLoop() {
	var (
		holdOff     *time.Timer // wakes a writer that held media back
		deadlineSet time.Time
		batchTimer  *time.Timer
		lastFlush   time.Time
	)
	holdC := func() <-chan time.Time {
		if holdOff == nil {
			return nil
		}
		return holdOff.C
	}
	for {
		select {
		case <-c.notify:
		case <-holdC():
		case <-c.closed:
			return
		}
		c.mu.Lock()
		mediaOnly := len(c.ctrl) == 0 && len(c.bindings) > 0
		c.mu.Unlock()
		if wait := c.cfg.WriteBatch - time.Since(lastFlush); mediaOnly && wait > 0 {
			// Let frames gather; whatever is pending then goes in one writev.
			if batchTimer == nil {
				batchTimer = time.NewTimer(wait)
			} else {
				batchTimer.Reset(wait)
			}
			select {
			case <-batchTimer.C:
			case <-c.closed:
				return
			}
		}
		for {
			now := time.Now()
			closeAfter, held, failed := c.gather(now)
			if held {
				if holdOff == nil {
					holdOff = time.NewTimer(20 * time.Millisecond)
				} else {
					holdOff.Reset(20 * time.Millisecond)
				}
			}
			if c.writer.Pending() == 0 {
				if closeAfter {
					c.Close(nil)
					return
				}
				break
			}
			// Refresh the write deadline about once a second, not per write.
			if now.Sub(deadlineSet) > time.Second {
				_ = c.nc.SetWriteDeadline(now.Add(c.cfg.WriteTimeout))
				deadlineSet = now
			}
			pending := c.writer.Pending()
			if err := c.writer.Flush(c.nc); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					c.cfg.Metrics.timedOut(timeoutWrite)
					err = fmt.Errorf("%w: %w", ErrWriteTimeout, err)
				}
				err = fmt.Errorf("%w: %w", errWrite, err)
				if failed != nil {
					err = failed // a source ended first; its status did not get out
				}
				c.Close(err)
				return
			}
			lastFlush = now
			c.wrote(pending)
			c.latencyWritten()
			if failed != nil {
				c.Close(failed)
				return
			}
			if held {
				break
			}
		}
	}
}
