package serve

import (
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/hub"
	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// The hub's reasons for closing a viewer reach the connection's close log
// and metrics by name: too_slow, overflow, stream_ended.
func TestViewerCloseReasons(t *testing.T) {
	reg := hub.NewRegistry(hub.Config{ViewerQueueFrames: 4, LosslessQueueFrames: 4, SlowViewerTimeout: time.Millisecond}, nil)
	for _, c := range []struct {
		lossless bool
		want     string
	}{{false, rtmp.ReasonTooSlow}, {true, rtmp.ReasonOverflow}} {
		h := reg.Acquire("live", c.want)
		h.Begin(hub.PublisherInfo{})
		v := newViewer(h, func() {}, hub.SubscribeOptions{Lossless: c.lossless}, time.Minute)
		h.Write(av.KindVideo, 0, []byte{0x17, 1, 0, 0, 0, 0, 0, 0, 1, 0x65})
		for ts := uint32(0); ts < 100 && v.Err() == nil; ts++ {
			h.Write(av.KindData, ts, []byte{2, 0, 1, 'x'}) // never dropped: overflows the queue
		}
		if got := rtmp.CloseReason(v.Err()); got != c.want {
			t.Errorf("Err %v: reason %q, want %q", v.Err(), got, c.want)
		}
		if _, err := v.Poll(nil, 0); rtmp.CloseReason(err) != c.want {
			t.Errorf("Poll: %v", err)
		}
		v.Close()
		h.End()
	}

	h := reg.Acquire("live", "ended")
	v := newViewer(h, func() {}, hub.SubscribeOptions{}, time.Millisecond)
	defer v.Close()
	deadline := time.Now().Add(5 * time.Second)
	for v.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := rtmp.CloseReason(v.Err()); got != rtmp.ReasonStreamEnded {
		t.Errorf("grace expired: reason %q", got)
	}
	if st, ok := asStatus(v.Err()); !ok || st.Code != rtmp.CodePlayStop {
		t.Errorf("grace expired: the player is not told Play.Stop: %v", v.Err())
	}
}

func asStatus(err error) (rtmp.Status, bool) {
	st, ok := err.(interface{ Unwrap() error })
	if !ok {
		return rtmp.Status{}, false
	}
	s, ok := st.Unwrap().(rtmp.Status)
	return s, ok
}
