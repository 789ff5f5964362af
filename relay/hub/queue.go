package hub

import "github.com/relaymesh/relaymesh/internal/av"

// queue is a fixed-capacity FIFO of frames, preallocated when a subscriber
// joins, plus a parallel FIFO of the timestamps of the droppable media frames
// it holds (the drop policy measures backlog from the oldest of those).
// Frames queued as the join burst (headers and GOP cache) are counted in
// burst and kept out of the backlog accounting.
type queue struct {
	frames      []*av.Frame
	head, n     int
	ts          []uint32
	tsHead, tsN int
	oldest      uint32 // ts[tsHead] when tsN > 0, kept here for the writer's cache's sake
	burst       int    // frames at the head that came from the join burst
}

// newQueue preallocates a queue; without backlog accounting (lossless
// subscribers) it keeps no timestamps.
func newQueue(capacity int, backlog bool) queue {
	q := queue{frames: make([]*av.Frame, capacity)}
	if backlog {
		q.ts = make([]uint32, capacity)
	}
	return q
}

func (q *queue) full() bool { return q.n == len(q.frames) }

// live is the number of queued frames that were queued after the join burst.
func (q *queue) live() int { return q.n - q.burst }

// push appends f; the caller checked that the queue is not full.
func (q *queue) push(f *av.Frame, burst bool) {
	i := q.head + q.n
	if i >= len(q.frames) {
		i -= len(q.frames)
	}
	q.frames[i] = f
	q.n++
	if burst {
		q.burst++
		return
	}
	if q.ts != nil && f.Droppable() {
		j := q.tsHead + q.tsN
		if j >= len(q.ts) {
			j -= len(q.ts)
		}
		q.ts[j] = f.Timestamp
		if q.tsN == 0 {
			q.oldest = f.Timestamp
		}
		q.tsN++
	}
}

// pop removes and returns the oldest frame; the caller checked n > 0.
func (q *queue) pop() *av.Frame {
	f := q.frames[q.head]
	q.frames[q.head] = nil
	q.head++
	if q.head == len(q.frames) {
		q.head = 0
	}
	q.n--
	if q.burst > 0 {
		q.burst--
	} else if q.ts != nil && f.Droppable() {
		q.tsHead++
		if q.tsHead == len(q.ts) {
			q.tsHead = 0
		}
		q.tsN--
		if q.tsN > 0 {
			q.oldest = q.ts[q.tsHead]
		}
	}
	return f
}

// oldestTS returns the timestamp of the oldest droppable frame queued after
// the join burst.
func (q *queue) oldestTS() (uint32, bool) {
	if q.tsN == 0 {
		return 0, false
	}
	return q.oldest, true
}

// reset drops every queued frame (for the garbage collector's sake).
func (q *queue) reset() {
	clear(q.frames)
	q.head, q.n, q.tsHead, q.tsN, q.burst = 0, 0, 0, 0, 0
}

// purgeVideo removes every queued droppable video frame, join burst
// included, keeping all other frames in order, and reports each removed
// frame to dropped. It is how a viewer that fell far behind skips to the
// next keyframe at once instead of first receiving stale pictures.
func (q *queue) purgeVideo(dropped func(*av.Frame)) {
	size := len(q.frames)
	kept, keptBurst := 0, 0
	q.tsHead, q.tsN = 0, 0
	for i := 0; i < q.n; i++ {
		src := q.head + i
		if src >= size {
			src -= size
		}
		f := q.frames[src]
		q.frames[src] = nil
		if f.Kind == av.KindVideo && f.Droppable() {
			dropped(f)
			continue
		}
		dst := q.head + kept
		if dst >= size {
			dst -= size
		}
		q.frames[dst] = f
		kept++
		if i < q.burst {
			keptBurst++
		} else if q.ts != nil && f.Droppable() {
			j := q.tsHead + q.tsN
			if j >= len(q.ts) {
				j -= len(q.ts)
			}
			q.ts[j] = f.Timestamp
			if q.tsN == 0 {
				q.oldest = f.Timestamp
			}
			q.tsN++
		}
	}
	q.n, q.burst = kept, keptBurst
}
