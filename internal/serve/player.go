package serve

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/hub"
	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// viewer adapts a hub subscriber to the RTMP connection's media source. It
// also keeps the viewer through a publisher's absence: after an unpublish
// the viewer stays connected for the grace period, and is told the stream
// stopped only when nobody publishes again in time.
type viewer struct {
	sub   *hub.Subscriber
	h     *hub.Hub
	wake  func() // the connection's writer: frames are pending
	grace time.Duration

	expired atomic.Bool
	mu      sync.Mutex
	timer   *time.Timer
	once    sync.Once
}

var errGraceExpired = rtmp.WithReason(rtmp.ReasonStreamEnded,
	rtmp.Status{Level: "status", Code: rtmp.CodePlayStop, Description: "the broadcaster did not come back"})

// reasoned names the hub's reasons for closing a subscriber for the
// connection's close log and metrics.
func reasoned(err error) error {
	switch {
	case errors.Is(err, hub.ErrTooSlow):
		return rtmp.WithReason(rtmp.ReasonTooSlow, err)
	case errors.Is(err, hub.ErrOverflow):
		return rtmp.WithReason(rtmp.ReasonOverflow, err)
	}
	return err
}

func newViewer(h *hub.Hub, wake func(), o hub.SubscribeOptions, grace time.Duration) *viewer {
	o.Wake = wake
	v := &viewer{h: h, wake: wake, grace: grace}
	v.sub = h.Subscribe(o)
	if !h.Live() {
		v.armGrace()
	}
	return v
}

func (v *viewer) armGrace() {
	if v.grace <= 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.timer != nil {
		v.timer.Stop()
	}
	v.timer = time.AfterFunc(v.grace, func() {
		v.expired.Store(true)
		v.wake()
	})
}

func (v *viewer) disarmGrace() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.timer != nil {
		v.timer.Stop()
		v.timer = nil
	}
	v.expired.Store(false)
}

// Poll implements rtmp.MediaSource.
func (v *viewer) Poll(dst []*av.Frame, maxBytes int) ([]*av.Frame, error) {
	frames, err := v.sub.Poll(dst, maxBytes)
	for _, f := range frames {
		if f.Kind == av.KindEvent {
			switch f.Event {
			case av.EventUnpublish:
				v.armGrace()
			case av.EventPublish:
				v.disarmGrace()
			}
		}
	}
	if err == nil && len(frames) == 0 && v.expired.Load() {
		err = errGraceExpired
	}
	if errors.Is(err, hub.ErrClosed) {
		// Closed by the connection itself (the stream was stopped): a
		// writer still holding it has nothing more to send, and no reason
		// to close the connection.
		err = nil
	}
	return frames, reasoned(err)
}

// Err implements rtmp.MediaSource.
func (v *viewer) Err() error {
	if err := v.sub.Err(); err != nil {
		return reasoned(err)
	}
	if v.expired.Load() {
		return errGraceExpired
	}
	return nil
}

// Close implements rtmp.MediaSource.
func (v *viewer) Close() {
	v.once.Do(func() {
		v.mu.Lock()
		if v.timer != nil {
			v.timer.Stop()
		}
		v.mu.Unlock()
		v.sub.Close()
		v.h.Release()
	})
}
