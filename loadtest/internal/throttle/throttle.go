// Package throttle emulates a slow link in a load tester's client: reads
// through it come no faster than a byte rate.
//
// A Link keeps the time it would have delivered the bytes read so far and
// makes the reader wait until then, after each read. A reader that was not
// scheduled for a while (a loaded machine) reads on without waiting until
// it is back on schedule, as a real link would have delivered meanwhile (up
// to CatchUp of it), so the emulated link does not get slower when the
// client's CPU is busy; a link that had nothing to carry banks no time; and
// a short read costs only the bytes it returned.
package throttle

import (
	"context"
	"net"
	"sync"
	"time"
)

// CatchUp bounds how far behind its schedule a link catches up at full
// speed.
const CatchUp = time.Second

// blocked is how long a read that returns data must have taken to have
// waited for it.
const blocked = time.Millisecond

// MaxRead is the most one read through a link takes, so that the pacing is
// finer than the reader's buffers.
const MaxRead = 4096

// Link is a byte rate shared by the connections that read through it.
type Link struct {
	nsPerByte float64
	mu        sync.Mutex
	next      time.Time // when the link has delivered what was read
}

// NewLink is a link of bitsPerSec (> 0).
func NewLink(bitsPerSec float64) *Link {
	return &Link{nsPerByte: 8e9 / bitsPerSec}
}

// delivered accounts n bytes read by a read that started at start and
// returned at now, and returns how long the reader waits.
func (l *Link) delivered(n int, start, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.next.IsZero() || now.Sub(start) > blocked && l.next.Before(now) {
		// The read waited for data: the link was idle, these bytes
		// start now. (A read that found data waiting returns at once,
		// however late its reader came: then the link delivered it
		// when it was done with the bytes before.)
		l.next = now
	}
	if floor := now.Add(-CatchUp); l.next.Before(floor) {
		l.next = floor
	}
	l.next = l.next.Add(time.Duration(float64(n) * l.nsPerByte))
	return l.next.Sub(now)
}

// Conn reads c through the link until ctx ends.
func (l *Link) Conn(ctx context.Context, c net.Conn) net.Conn {
	return &conn{Conn: c, link: l, ctx: ctx}
}

type conn struct {
	net.Conn
	link *Link
	ctx  context.Context
}

func (c *conn) Read(p []byte) (int, error) {
	if len(p) > MaxRead {
		p = p[:MaxRead]
	}
	start := time.Now()
	n, err := c.Conn.Read(p)
	if n == 0 {
		return n, err
	}
	if wait := c.link.delivered(n, start, time.Now()); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.ctx.Done():
			return n, c.ctx.Err()
		}
	}
	return n, err
}
