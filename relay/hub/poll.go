package hub

import "github.com/relaymesh/relaymesh/internal/av"

// Poll is the non-blocking Next: it returns the pending frames (possibly
// none) appended to dst[:0], up to maxBytes of payload, or the reason the
// subscriber was closed. A reader using Poll waits on SubscribeOptions.Notify.
func (s *Subscriber) Poll(dst []*av.Frame, maxBytes int) ([]*av.Frame, error) {
	dst = dst[:0]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		if s.reason != nil {
			return dst, s.reason
		}
		return dst, s.err
	}
	bytes := 0
	for s.q.n > 0 {
		f := s.q.pop()
		dst = append(dst, f)
		bytes += len(f.Payload)
		if maxBytes > 0 && bytes >= maxBytes {
			break
		}
	}
	s.sent += uint64(len(dst))
	return dst, nil
}
