package liveness

import (
	"context"
	"testing"

	"github.com/relaymesh/relaymesh/topology/liveness/livenesstest"
)

func TestAddr(t *testing.T) {
	for _, tc := range []struct {
		http, rtmp, want string
	}{
		{"10.0.0.1:8080", "10.0.0.1:1935", "10.0.0.1:8080"},
		{"", "relay.example.net:1935", "relay.example.net:1935"},
		{"[::]:8080", "0.0.0.0:1935", ""},
		{":8080", "10.0.0.1:1935", "10.0.0.1:1935"},
		{"10.0.0.1", "", ""},
		{"", "", ""},
	} {
		if got := Addr(tc.http, tc.rtmp); got != tc.want {
			t.Errorf("Addr(%q, %q) = %q, want %q", tc.http, tc.rtmp, got, tc.want)
		}
	}
}

// A listener answers, a closed port refuses.
func TestDial(t *testing.T) {
	ln := livenesstest.Listen(t)
	addr := ln.Addr().String()
	if got := Dial(context.Background(), addr); got != Answered {
		t.Errorf("listening: %v", got)
	}
	ln.Close()
	if got := Dial(context.Background(), addr); got != Refused {
		t.Errorf("closed: %v", got)
	}
}

// Confirm: refused at once or after answering a while (a listener closing
// after the bus connection), answering all along, a relay heard from again,
// no answer.
func TestConfirm(t *testing.T) {
	script := func(rs ...Result) func(context.Context, string) Result {
		return func(context.Context, string) Result {
			r := rs[0]
			if len(rs) > 1 {
				rs = rs[1:]
			}
			return r
		}
	}
	for _, tc := range []struct {
		name   string
		dial   func(context.Context, string) Result
		spoke  func() bool
		want   Outcome
		probes int
	}{
		{"refused", script(Refused), nil, Gone, 1},
		{"closing", script(Answered, Answered, Refused), nil, Gone, 3},
		{"alive", script(Answered), nil, Alive, len(Again) + 1},
		{"spoke", script(Answered), func() bool { return true }, Alive, 1},
		{"no answer", script(Answered, Unknown), nil, Undecided, 2},
	} {
		out, n := Confirm(context.Background(), "relay:8080", tc.dial, tc.spoke)
		if out != tc.want || n != tc.probes {
			t.Errorf("%s: %v after %d connects, want %v after %d", tc.name, out, n, tc.want, tc.probes)
		}
	}
}
