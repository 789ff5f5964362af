package hub

import "github.com/relaymesh/relaymesh/internal/av"

// Poll is the non-blocking Next: it returns the pending frames (possibly
// none) appended to dst[:0], oldest first, stopping once their payload bytes
// reach maxBytes (maxBytes <= 0: no limit), or the reason the subscriber was
// closed (ErrTooSlow, ErrOverflow, ErrClosed).
//
// A reader using Poll waits on SubscribeOptions.Notify, which is signalled
// when the queue goes from empty to non-empty and when the subscriber is
// closed: so after a Poll that stopped at maxBytes, poll again before waiting.
func (s *Subscriber) Poll(dst []*av.Frame, maxBytes int) ([]*av.Frame, error) {
	dst = dst[:0]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return dst, s.err
	}
	return s.takeLocked(dst, maxBytes), nil
}

// takeLocked moves queued frames to dst up to maxBytes (at least one if any
// is queued). s.mu is held.
func (s *Subscriber) takeLocked(dst []*av.Frame, maxBytes int) []*av.Frame {
	n := len(dst)
	bytes := 0
	for s.q.n > 0 {
		f := s.q.pop()
		dst = append(dst, f)
		bytes += len(f.Payload)
		if maxBytes > 0 && bytes >= maxBytes {
			break
		}
	}
	s.sent += uint64(len(dst) - n)
	s.sentBytes += uint64(bytes)
	if s.q.n == 0 {
		s.behind = false // the reader caught up with the live edge
		s.q.shrink()
	}
	return dst
}
