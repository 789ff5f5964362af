package hub

import (
	"context"
	"sync"

	"github.com/relaymesh/relaymesh/internal/av"
)

// SubscribeOptions describe a new subscriber.
type SubscribeOptions struct {
	// Lossless subscribers (downstream relays, the packager) get every frame
	// and never the drop policy; if they fall LosslessQueueFrames behind they
	// are closed with ErrOverflow.
	Lossless bool
	// ID and Addr identify the subscriber in Info (connection id, remote address).
	ID, Addr string
	// Notify, when set, is signalled (without blocking) instead of a private
	// channel whenever frames become pending or the subscriber is closed, so
	// that one connection writer can wait for its control queue and all its
	// streams at once and read them with Poll. It must have capacity 1.
	Notify chan struct{}
	// Wake, when set, is called instead of signalling a channel (it must
	// not block): a writer that serves many connections in rounds learns
	// that one of them has frames without a channel per connection. A
	// subscriber with Wake is read with Poll.
	Wake func()
}

// DropCounts splits dropped frames by class.
type DropCounts struct {
	Disposable uint64 `json:"disposable"` // video frames nothing references
	Inter      uint64 `json:"inter"`      // other non-key video frames
	Key        uint64 `json:"key"`        // keyframes
	Audio      uint64 `json:"audio"`
}

// Total is the sum of all classes.
func (d DropCounts) Total() uint64 { return d.Disposable + d.Inter + d.Key + d.Audio }

func (d *DropCounts) add(o DropCounts) {
	d.Disposable += o.Disposable
	d.Inter += o.Inter
	d.Key += o.Key
	d.Audio += o.Audio
}

// SubscriberInfo is a snapshot of one subscriber for the streams API.
type SubscriberInfo struct {
	ID             string     `json:"id"`
	Addr           string     `json:"addr"`
	Kind           string     `json:"kind"` // "viewer" or "lossless"
	Sent           uint64     `json:"sent"` // frames returned by Next
	Dropped        uint64     `json:"dropped"`
	DroppedByClass DropCounts `json:"dropped_by_class"`
	Queued         int        `json:"queued"`           // frames waiting in the queue
	WaitingForKey  bool       `json:"waiting_for_key"`  // no video until the next keyframe
	Closed         string     `json:"closed,omitempty"` // why the hub closed it, if it did
}

// Subscriber reads the frames of one Hub. One goroutine calls Next; Close,
// Err and Info may be called from any goroutine.
type Subscriber struct {
	hub      *Hub
	lossless bool
	id, addr string

	notify chan struct{} // cap 1: the queue went from empty to non-empty
	wakeFn func()        // replaces notify when set (SubscribeOptions.Wake)
	done   chan struct{} // closed when the subscriber is closed

	// Set once at Subscribe from the hub's Config.
	limit     int   // ViewerQueueFrames or LosslessQueueFrames
	queueMS   int64 // ViewerQueue in ms
	batchMS   int64 // WriteBatch in ms
	timeoutMS int64 // SlowViewerTimeout in ms

	mu      sync.Mutex
	q       queue
	waitKey bool // queue no video until the next keyframe

	starving      bool   // dropping every media frame: the backlog is full
	starvingSince uint32 // timestamp of the first frame of the current run
	// behind: stale pictures were purged and the reader has not emptied its
	// queue since; a viewer behind for SlowViewerTimeout of media is closed
	// (a stream without audio never reaches the full level).
	behind      bool
	behindSince uint32

	sent      uint64
	sentBytes uint64 // payload bytes of the frames sent
	dropped   DropCounts
	err       error // set when closed: ErrClosed or the hub's reason
	reason    error // the hub's reason (ErrTooSlow, ErrOverflow) or nil

	listed     bool // in the hub's subscriber list; guarded by hub.mu
	joinedLive bool // the hub was live at Subscribe
}

// Next blocks until at least one frame is pending, the context is done or
// the subscriber is closed. It returns the pending frames appended to
// dst[:0], oldest first, stopping once their payload bytes reach maxBytes
// (maxBytes <= 0: no limit); it always returns at least one frame when it
// returns no error. Only one goroutine may call Next, and a subscriber is
// read either with Next or with Poll, not both.
func (s *Subscriber) Next(ctx context.Context, dst []*av.Frame, maxBytes int) ([]*av.Frame, error) {
	dst = dst[:0]
	for {
		s.mu.Lock()
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return dst, err
		}
		if s.q.n > 0 {
			dst = s.takeLocked(dst, maxBytes)
			s.mu.Unlock()
			return dst, nil
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return dst, ctx.Err()
		case <-s.notify:
		case <-s.done:
		}
	}
}

// Close unsubscribes. It is idempotent; a Next in progress returns ErrClosed.
func (s *Subscriber) Close() {
	s.mu.Lock()
	s.closeLocked(ErrClosed, nil)
	s.mu.Unlock()
	s.hub.unsubscribe(s)
}

// Err reports why the hub closed the subscriber: ErrTooSlow, ErrOverflow, or
// nil (still open, or closed by its owner).
func (s *Subscriber) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// JoinedLive reports whether the stream was live when the subscriber joined
// (then its queue starts with the join burst, and no av.EventPublish frame
// announces the session in progress).
func (s *Subscriber) JoinedLive() bool { return s.joinedLive }

// Done is closed when the subscriber is closed, by its owner or by the hub.
func (s *Subscriber) Done() <-chan struct{} { return s.done }

// Info returns a snapshot of the subscriber's counters.
func (s *Subscriber) Info() SubscriberInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := SubscriberInfo{
		ID:             s.id,
		Addr:           s.addr,
		Kind:           "viewer",
		Sent:           s.sent,
		Dropped:        s.dropped.Total(),
		DroppedByClass: s.dropped,
		Queued:         s.q.n,
		WaitingForKey:  s.waitKey,
	}
	if s.lossless {
		in.Kind = "lossless"
	}
	if s.reason != nil {
		in.Closed = s.reason.Error()
	}
	return in
}

// closeLocked marks the subscriber closed and frees its queue. s.mu is held.
func (s *Subscriber) closeLocked(err, reason error) bool {
	if s.err != nil {
		return false
	}
	s.err = err
	s.reason = reason
	s.q.reset()
	close(s.done)
	s.wake() // a Poll-driven reader learns of the close from its Notify channel
	return true
}

// wake signals the reader without blocking.
func (s *Subscriber) wake() {
	if s.wakeFn != nil {
		s.wakeFn()
		return
	}
	select {
	case s.notify <- struct{}{}:
	default:
	}
}
