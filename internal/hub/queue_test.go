package hub

import (
	"testing"

	"github.com/relaymesh/relaymesh/internal/av"
)

// A ring that grew gives its room back once it is empty, and keeps working.
func TestQueueShrinksWhenEmpty(t *testing.T) {
	q := newQueue(initialQueue, 4096, true)
	f := &av.Frame{Kind: av.KindVideo, Timestamp: 1, Payload: []byte{0x27, 1}}
	for range 600 {
		q.push(f, false, 1, 1)
	}
	if len(q.frames) < 600 {
		t.Fatalf("ring of %d for 600 frames", len(q.frames))
	}
	for q.n > 1 {
		q.pop()
	}
	q.shrink()
	if len(q.frames) < 600 {
		t.Fatal("shrank while a frame was queued")
	}
	q.pop()
	q.shrink()
	if len(q.frames) != initialQueue || len(q.ts) != initialQueue {
		t.Fatalf("ring of %d (timestamps %d) once empty, want %d", len(q.frames), len(q.ts), initialQueue)
	}
	for i := range 100 {
		q.push(&av.Frame{Kind: av.KindVideo, Timestamp: uint32(i), Payload: []byte{0x27, 1}}, false, uint32(i), uint32(i))
	}
	for i := range 100 {
		if got := q.pop(); got.Timestamp != uint32(i) {
			t.Fatalf("frame %d has timestamp %d", i, got.Timestamp)
		}
	}
}

// A ring made for a join burst (a GOP cache smaller than what the ring
// grows to) is given back once the burst is read.
func TestQueueJoinBurstRingShrinks(t *testing.T) {
	const burst = 150 // a 2 s GOP of 30 fps video and AAC
	q := newQueue(burst+initialQueue, 4096, true)
	f := &av.Frame{Kind: av.KindVideo, Timestamp: 1, Payload: []byte{0x27, 1}}
	for range burst {
		q.push(f, true, 0, 0)
	}
	for q.n > 0 {
		q.pop()
	}
	q.shrink()
	if len(q.frames) != initialQueue || len(q.ts) != initialQueue {
		t.Fatalf("ring of %d (timestamps %d) after the burst, want %d", len(q.frames), len(q.ts), initialQueue)
	}
}
