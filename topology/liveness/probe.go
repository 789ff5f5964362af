package liveness

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// Result is what a relay's listener said to one connect.
type Result int

// Results of Dial.
const (
	Unknown  Result = iota // no answer in time, or another error
	Answered               // it accepted the connection
	Refused                // nothing listens there
)

// Timeout bounds one connect to a relay's listener.
const Timeout = 500 * time.Millisecond

// MaxProbes is how many relays a reader should ask at once at most; beyond,
// the heartbeats decide alone (a NATS server that lost every client at once).
const MaxProbes = 32

// Again are the waits before each new connect to a relay that answered
// (0.77 s in all, within a heartbeat timeout).
var Again = [...]time.Duration{20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}

// Dial connects to addr and closes the connection.
func Dial(ctx context.Context, addr string) Result {
	d := net.Dialer{Timeout: Timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		c.Close()
		return Answered
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return Refused
	}
	return Unknown
}

// Addr is where to ask a relay that reported these listen addresses: its
// HTTP address, else its RTMP one; "" when neither names one host (a
// wildcard listen address would be dialled on this machine).
func Addr(httpAddr, rtmpAddr string) string {
	for _, a := range []string{httpAddr, rtmpAddr} {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || port == "" || port == "0" {
			continue
		}
		if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
			continue
		}
		return a
	}
	return ""
}

// Outcome is what Confirm found out.
type Outcome int

// Outcomes of Confirm.
const (
	Undecided Outcome = iota // no answer: the heartbeats decide
	Alive                    // the listener kept answering, or the relay spoke again
	Gone                     // the listener refused: no process there
)

func (o Outcome) String() string {
	return [...]string{"unknown", "alive", "gone"}[o]
}

// Confirm asks the listener at addr whether the relay whose bus connection
// closed is gone: dial (Dial, or a test's) is asked at once and, while it
// answers, again after each of Again, unless spoke (when not nil) reports
// that the relay was heard from since. It returns the outcome and the
// number of connects made.
func Confirm(ctx context.Context, addr string, dial func(context.Context, string) Result, spoke func() bool) (Outcome, int) {
	for round := 0; ; round++ {
		switch dial(ctx, addr) {
		case Refused:
			return Gone, round + 1
		case Unknown:
			return Undecided, round + 1
		}
		if round == len(Again) {
			return Alive, round + 1
		}
		select {
		case <-ctx.Done():
			return Undecided, round + 1
		case <-time.After(Again[round]):
		}
		if spoke != nil && spoke() {
			return Alive, round + 1
		}
	}
}
