package hub

import "github.com/relaymesh/relaymesh/internal/av"

// Backlog levels, in quarters of the viewer's limit (see level).
const (
	levelDisposable = 1 // ≥ 1/4: drop disposable video
	levelInter      = 2 // ≥ 1/2: drop non-key video, wait for a keyframe
	levelKey        = 3 // ≥ 3/4: drop keyframes too
	levelFull       = 4 // ≥ 1:   drop audio too
)

// level measures the viewer's backlog when a frame arriving at media time at
// (see arrivalClock) and wall time wall is about to be queued: the larger of
// (arrival time of the oldest queued droppable frame to at) / ViewerQueue
// and (queued frames that have waited) / ViewerQueueFrames, in quarters,
// capped at levelFull. Frames of the join burst do not count, nor frames
// that arrived together (an upstream's start-up burst: the viewer could not
// have read them earlier; a media frame counts by number once it has waited
// longer than the write batch plus burstWait), nor the media time a writer
// gathers on purpose (WriteBatch). A full queue is at levelFull.
func (s *Subscriber) level(at, wall uint32) int {
	if s.q.full() {
		return levelFull
	}
	lv := 0
	if live := s.q.live(); live*4 >= s.limit { // else no count reaches a level
		waited := live - s.q.tsN // never-dropped frames after the join burst
		if s.q.tsN > 0 {
			waited += s.q.waitedSince(wall - uint32(s.batchMS) - burstWaitMS)
		}
		lv = waited * 4 / s.limit
	}
	if oldest, ok := s.q.oldestTS(); ok && s.queueMS > 0 {
		// Serial arithmetic (wraps at 2^32 ms); what waits for the writer's
		// batch is no backlog.
		if d := int64(int32(at-oldest)) - s.batchMS; d > 0 {
			if t := int(d * 4 / s.queueMS); t > lv {
				lv = t
			}
		}
	}
	return min(lv, levelFull)
}

// burstWaitMS is how long beyond the write batch a media frame may wait in a
// viewer's queue before it counts toward ViewerQueueFrames: the frames of a
// start-up burst (a long GOP cache: 600 frames for 8 s of 30 fps video and
// AAC) arrive within a few ms of each other and are read as fast.
const burstWaitMS = 100

// offer applies the subscriber's policy to f, which arrived in the hub at
// media time at and wall time wall, and queues it or counts it as dropped. It reports whether
// the reader has to be woken (the queue was empty) and, when the subscriber
// has to be closed, the reason. The hub calls it with hub.mu held, for every
// subscriber, in stream order.
func (s *Subscriber) offer(f *av.Frame, at, wall uint32) (wake bool, fail error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false, nil
	}
	if f.Kind == av.KindEvent && f.Event == av.EventPublish {
		// A new session: its first video frame has to be a keyframe.
		s.waitKey = true
	}
	if s.lossless {
		return s.offerLossless(f, at, wall)
	}
	if !f.Droppable() {
		if s.q.full() {
			return false, ErrTooSlow
		}
		return s.push(f, at, wall), nil
	}
	lv := s.level(at, wall)
	if lv >= levelKey && f.Kind == av.KindVideo {
		// Far behind: every queued picture is stale. Skip them all (the join
		// burst too) and resume at the next keyframe; audio stays queued.
		s.q.purgeVideo(s.countDrop)
		s.waitKey = true
		if !s.behind {
			s.behind, s.behindSince = true, at
		} else if d := int32(at - s.behindSince); int64(d) >= s.timeoutMS {
			return false, ErrTooSlow
		}
		lv = s.level(at, wall)
	}
	if lv >= levelFull {
		// Everything droppable goes. A viewer that stays this far behind for
		// SlowViewerTimeout of media time (in practice: keeps losing audio)
		// is closed.
		s.countDrop(f)
		if !s.starving {
			s.starving = true
			s.starvingSince = at
		} else if d := int32(at - s.starvingSince); int64(d) >= s.timeoutMS {
			return false, ErrTooSlow
		}
		if f.Kind == av.KindVideo && !f.Disposable {
			s.waitKey = true
		}
		return false, nil
	}
	if f.Kind == av.KindAudio {
		return s.push(f, at, wall), nil
	}
	// Video.
	switch {
	case s.waitKey:
		if f.Keyframe && lv < levelKey {
			s.waitKey = false
			return s.push(f, at, wall), nil
		}
	case lv >= levelInter:
		if f.Keyframe && lv < levelKey {
			return s.push(f, at, wall), nil
		}
		s.waitKey = true
	case lv >= levelDisposable:
		if !f.Disposable {
			return s.push(f, at, wall), nil
		}
	default:
		return s.push(f, at, wall), nil
	}
	s.countDrop(f)
	return false, nil
}

// offerLossless queues every frame; the only frames skipped are video frames
// before the first keyframe of a session (nothing could decode them).
func (s *Subscriber) offerLossless(f *av.Frame, at, wall uint32) (bool, error) {
	if s.waitKey && f.Kind == av.KindVideo && !f.SeqHeader {
		if !f.Keyframe {
			s.countDrop(f)
			return false, nil
		}
		s.waitKey = false
	}
	if s.q.live() >= s.limit || s.q.full() {
		return false, ErrOverflow
	}
	return s.push(f, at, wall), nil
}

// push queues f, which arrived at media time at and wall time wall (the
// queue has room), and reports whether it was empty.
func (s *Subscriber) push(f *av.Frame, at, wall uint32) bool {
	if f.Droppable() {
		s.starving = false
	}
	s.q.push(f, false, at, wall)
	return s.q.n == 1
}

func (s *Subscriber) countDrop(f *av.Frame) {
	switch {
	case f.Kind == av.KindAudio:
		s.dropped.Audio++
	case f.Keyframe:
		s.dropped.Key++
	case f.Disposable:
		s.dropped.Disposable++
	default:
		s.dropped.Inter++
	}
}
