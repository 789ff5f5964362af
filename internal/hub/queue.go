package hub

import "github.com/relaymesh/relaymesh/internal/av"

// queue is a bounded FIFO of frames, a ring that starts small and doubles up
// to its bound when a viewer falls behind (most never do), plus a parallel
// FIFO of the arrival stamps of the droppable media frames it holds (the
// drop policy measures backlog from the oldest of those, and counts the
// frames that have waited).
// Frames queued as the join burst (headers and GOP cache) are counted in
// burst and kept out of the backlog accounting.
type queue struct {
	frames      []*av.Frame
	head, n     int
	ts          []stamp
	tsHead, tsN int
	oldest      uint32 // ts[tsHead].at when tsN > 0, kept here for the writer's cache's sake
	burst       int    // frames at the head that came from the join burst
	bound       int    // most frames the queue may hold
	forBurst    bool   // the ring was made larger for a join burst
}

// stamp is when a frame arrived: on the media timeline (see arrivalClock)
// and on the wall clock, in ms (serial arithmetic).
type stamp struct{ at, wall uint32 }

// initialQueue is how many frames a new queue has room for beyond its join
// burst before it first grows: four times what a viewer's writer takes in
// one of its longest rounds (~8 frames of a 30 fps stream with audio in
// 100 ms), so that a viewer that keeps up never grows its ring, and 512
// bytes of ring and stamps a viewer.
const initialQueue = 32

// newQueue makes a queue for up to bound frames with room for initial of
// them; without backlog accounting (lossless subscribers) it keeps no
// timestamps.
func newQueue(initial, bound int, backlog bool) queue {
	initial = max(min(initial, bound), 1)
	q := queue{frames: make([]*av.Frame, initial), bound: bound, forBurst: initial > initialQueue}
	if backlog {
		q.ts = make([]stamp, initial)
	}
	return q
}

func (q *queue) full() bool { return q.n >= q.bound }

// grow doubles the ring (up to the bound), keeping the order.
func (q *queue) grow() {
	size := min(2*len(q.frames), q.bound)
	frames := make([]*av.Frame, size)
	for i := 0; i < q.n; i++ {
		frames[i] = q.frames[(q.head+i)%len(q.frames)]
	}
	q.frames, q.head = frames, 0
	if q.ts != nil {
		ts := make([]stamp, size)
		for i := 0; i < q.tsN; i++ {
			ts[i] = q.ts[(q.tsHead+i)%len(q.ts)]
		}
		q.ts, q.tsHead = ts, 0
	}
}

// shrink gives back a ring once it is empty when it was made for a join
// burst, or grew past 4 × initialQueue (a backlog; below, a viewer that
// falls behind now and then would grow and shrink its ring each time): a
// thousand viewers would otherwise each keep room for a GOP (a 2 s GOP of
// 30 fps video and AAC is ~150 frames, 3.4 KB of ring and stamps).
func (q *queue) shrink() {
	if q.n != 0 || len(q.frames) <= initialQueue || (!q.forBurst && len(q.frames) <= 4*initialQueue) {
		return
	}
	q.forBurst = false
	q.frames, q.head = make([]*av.Frame, initialQueue), 0
	if q.ts != nil {
		q.ts, q.tsHead = make([]stamp, initialQueue), 0
	}
}

// live is the number of queued frames that were queued after the join burst.
func (q *queue) live() int { return q.n - q.burst }

// push appends f, which arrived at media time at and wall time wall; the
// caller checked that the queue is not full.
func (q *queue) push(f *av.Frame, burst bool, at, wall uint32) {
	if q.n == len(q.frames) {
		q.grow()
	}
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
		q.ts[j] = stamp{at, wall}
		if q.tsN == 0 {
			q.oldest = at
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
			q.oldest = q.ts[q.tsHead].at
		}
	}
	return f
}

// oldestTS returns the arrival time of the oldest droppable frame queued
// after the join burst.
func (q *queue) oldestTS() (uint32, bool) {
	if q.tsN == 0 {
		return 0, false
	}
	return q.oldest, true
}

// waitedSince counts the droppable frames queued after the join burst that
// arrived before wall time wall (their stamps are in arrival order: a binary
// search, no scan).
func (q *queue) waitedSince(wall uint32) int {
	lo, hi := 0, q.tsN
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		j := q.tsHead + mid
		if j >= len(q.ts) {
			j -= len(q.ts)
		}
		if int32(q.ts[j].wall-wall) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
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
	// The arrival times are compacted in place like the frames: the k-th
	// timed frame read is at tsHead+k, and fewer than k are kept before it.
	tsRead := q.tsHead
	q.tsN = 0
	for i := 0; i < q.n; i++ {
		src := q.head + i
		if src >= size {
			src -= size
		}
		f := q.frames[src]
		q.frames[src] = nil
		var st stamp
		if i >= q.burst && q.ts != nil && f.Droppable() {
			st = q.ts[tsRead]
			if tsRead++; tsRead == len(q.ts) {
				tsRead = 0
			}
		}
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
			q.ts[j] = st
			if q.tsN == 0 {
				q.oldest = st.at
			}
			q.tsN++
		}
	}
	q.n, q.burst = kept, keptBurst
}
