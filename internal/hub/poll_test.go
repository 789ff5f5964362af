package hub

import (
	"errors"
	"testing"

	"github.com/relaymesh/relaymesh/internal/av"
)

// TestPollSharedNotify: two subscribers of two hubs signal one channel, as
// the streams of one RTMP connection do.
func TestPollSharedNotify(t *testing.T) {
	r := newTestRegistry(Config{ViewerQueueFrames: 8, SlowViewerTimeout: 1})
	notify := make(chan struct{}, 1)
	a, b := r.Acquire("live", "a"), r.Acquire("live", "b")
	defer a.Release()
	defer b.Release()
	a.Begin(PublisherInfo{})
	b.Begin(PublisherInfo{})
	sa := a.Subscribe(SubscribeOptions{Notify: notify})
	sb := b.Subscribe(SubscribeOptions{Notify: notify, Lossless: true})
	defer sa.Close()
	defer sb.Close()

	if got, err := sa.Poll(nil, 0); err != nil || len(got) != 0 {
		t.Fatalf("empty poll: %d frames, %v", len(got), err)
	}
	select {
	case <-notify:
		t.Fatal("signalled without frames")
	default:
	}
	b.Write(av.KindVideo, 0, idr)
	<-notify
	b.Write(av.KindVideo, 40, pRef) // queue not empty: no second signal needed
	got, err := sb.Poll(nil, 1)
	if err != nil || kinds(got) != "I" {
		t.Fatalf("poll: %q %v", kinds(got), err)
	}
	got, _ = sb.Poll(got, 0)
	if kinds(got) != "p" {
		t.Fatalf("poll rest: %q", kinds(got))
	}
	// Closing by the hub signals too, and Poll then reports why.
	for i := 0; i < 8; i++ {
		a.Write(av.KindAudio, uint32(i), aacRaw)
	}
	<-notify
	a.Write(av.KindAudio, 100, aacRaw)
	a.Write(av.KindAudio, 200, aacRaw) // still full after the timeout: closed
	<-notify
	if _, err := sa.Poll(nil, 0); !errors.Is(err, ErrTooSlow) {
		t.Fatalf("poll after close: %v", err)
	}
	if in := sb.Info(); in.Sent != 2 {
		t.Fatalf("sent %d", in.Sent)
	}
	sb.Close()
	if _, err := sb.Poll(nil, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("poll after Close: %v", err)
	}
}
