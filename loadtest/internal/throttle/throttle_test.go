package throttle

import (
	"testing"
	"time"
)

func TestDeliveredKeepsTheRate(t *testing.T) {
	l := NewLink(8000) // 1,000 bytes a second
	t0 := time.Unix(1000, 0)
	// A read of 500 bytes returning at once: the link takes half a second.
	if w := l.delivered(500, t0, t0); w != 500*time.Millisecond {
		t.Fatalf("wait %v, want 500ms", w)
	}
	// The reader was late by 300 ms: it waits only what is left.
	at := t0.Add(800 * time.Millisecond)
	if w := l.delivered(500, at, at); w != 200*time.Millisecond {
		t.Fatalf("late reader waits %v, want 200ms", w)
	}
}

func TestDeliveredBanksNoIdleTime(t *testing.T) {
	l := NewLink(8000)
	t0 := time.Unix(1000, 0)
	l.delivered(100, t0, t0)
	// Nothing to read for 9 s: a read that blocked until data came.
	start, now := t0.Add(time.Second), t0.Add(10*time.Second)
	if w := l.delivered(1000, start, now); w != time.Second {
		t.Fatalf("after idle: wait %v, want 1s", w)
	}
}

func TestDeliveredCatchesUpAtMostCatchUp(t *testing.T) {
	l := NewLink(8000)
	t0 := time.Unix(1000, 0)
	l.delivered(10_000, t0, t0) // the link is busy for 10 s
	// The reader comes back 30 s after the link was done, with data
	// waiting all along (the read returns at once): only CatchUp is made
	// up.
	at := t0.Add(40 * time.Second)
	if w := l.delivered(3000, at, at); w != 3*time.Second-CatchUp {
		t.Fatalf("wait %v, want %v", w, 3*time.Second-CatchUp)
	}
}
