package httpswarm

import (
	"testing"
	"time"
)

func TestPlayout(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	p := newPlayout(2)
	p.place(0, 10, at(0)) // video joins 2 s behind an edge at 12
	p.add(0, 1, at(0.1))
	if started, _, _ := p.add(0, 1, at(0.2)); started {
		t.Fatal("started before the audio track had media")
	}
	p.place(1, 10.5, at(0.3)) // audio joins 1.5 s behind
	p.add(1, 1.5, at(0.4))    // audio buffered to 12
	started, when, _ := p.add(1, 0, at(0.4))
	if !started || !when.Equal(at(0.4)) {
		t.Fatalf("started %v at %v", started, when)
	}
	// The playhead starts at 10.5 (the later join) with 1.5 s buffered; no
	// more media for 2 s: it stalls at 1.9 s, until 2.4.
	if p.stalled(at(1.8)) {
		t.Fatal("stalled early")
	}
	if !p.stalled(at(2.0)) {
		t.Fatal("not stalled with an empty buffer")
	}
	p.add(0, 1, at(2.4))
	_, _, stalls := p.add(1, 1, at(2.4))
	if stalls != 1 || p.stalled(at(2.5)) {
		t.Fatalf("stalls %d", stalls)
	}
	if d := p.stallTime; d < 499*time.Millisecond || d > 501*time.Millisecond {
		t.Fatalf("stall time %v, want 0.5 s", d)
	}
	// Buffered to 13 at 2.4, playhead 12: a second stall from 3.4 to the end at 4.
	p.finish(at(4))
	if p.stalls != 2 || p.maxStall < 599*time.Millisecond || p.maxStall > 601*time.Millisecond {
		t.Fatalf("stalls %d, longest %v", p.stalls, p.maxStall)
	}
}
