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
// (see arrivalClock) is about to be queued: the larger of (arrival time of
// the oldest queued droppable frame to at) / ViewerQueue and (queued frames)
// / ViewerQueueFrames, in quarters, capped at levelFull. Frames of the join
// burst do not count, nor frames that arrived together (an upstream's
// start-up burst: the viewer could not have read them earlier), nor the
// media time a writer gathers on purpose (WriteBatch).
func (s *Subscriber) level(at uint32) int {
	lv := s.q.live() * 4 / s.limit
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

// offer applies the subscriber's policy to f, which arrived in the hub at
// media time at, and queues it or counts it as dropped. It reports whether
// the reader has to be woken (the queue was empty) and, when the subscriber
// has to be closed, the reason. The hub calls it with hub.mu held, for every
// subscriber, in stream order.
func (s *Subscriber) offer(f *av.Frame, at uint32) (wake bool, fail error) {
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
		return s.offerLossless(f, at)
	}
	if !f.Droppable() {
		if s.q.full() {
			return false, ErrTooSlow
		}
		return s.push(f, at), nil
	}
	lv := s.level(at)
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
		lv = s.level(at)
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
		return s.push(f, at), nil
	}
	// Video.
	switch {
	case s.waitKey:
		if f.Keyframe && lv < levelKey {
			s.waitKey = false
			return s.push(f, at), nil
		}
	case lv >= levelInter:
		if f.Keyframe && lv < levelKey {
			return s.push(f, at), nil
		}
		s.waitKey = true
	case lv >= levelDisposable:
		if !f.Disposable {
			return s.push(f, at), nil
		}
	default:
		return s.push(f, at), nil
	}
	s.countDrop(f)
	return false, nil
}

// offerLossless queues every frame; the only frames skipped are video frames
// before the first keyframe of a session (nothing could decode them).
func (s *Subscriber) offerLossless(f *av.Frame, at uint32) (bool, error) {
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
	return s.push(f, at), nil
}

// push queues f, which arrived at media time at (the queue has room), and
// reports whether it was empty.
func (s *Subscriber) push(f *av.Frame, at uint32) bool {
	if f.Droppable() {
		s.starving = false
	}
	s.q.push(f, false, at)
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
