package hub

import (
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

func FuzzMetadataVideoSize(f *testing.F) {
	f.Add(amfMeta(640, 360))
	f.Fuzz(func(t *testing.T, p []byte) {
		w, h, ok := metadataVideoSize(p)
		if ok && (w < 1 || h < 1 || w > 1<<16 || h > 1<<16) {
			t.Fatalf("size %dx%d", w, h)
		}
		if !ok && (w != 0 || h != 0) {
			t.Fatal("size without ok")
		}
	})
}

// FuzzHub drives a hub with a script of operations read from the input and
// checks that a viewer and a lossless subscriber that stay subscribed account
// for every frame offered to them: sent + dropped + queued = offered.
func FuzzHub(f *testing.F) {
	f.Add([]byte{0, 1, 0, 10, 2, 0, 40, 3, 0, 5, 4, 6, 0, 40, 7, 0, 40, 5, 8, 9})
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 4096 {
			return
		}
		r := newTestRegistry(Config{ViewerQueue: 200 * time.Millisecond, ViewerQueueFrames: 8,
			LosslessQueueFrames: 64, SlowViewerTimeout: time.Second, GOPCacheMaxFrames: 16})
		h := r.Acquire("live", "fuzz")
		defer h.Release()
		v := h.Subscribe(SubscribeOptions{})
		l := h.Subscribe(SubscribeOptions{Lossless: true})
		var churn *Subscriber
		offered := 0
		live := false
		var ts uint32
		for len(script) > 0 {
			op := script[0]
			script = script[1:]
			arg := 0
			if len(script) > 0 {
				arg = int(script[0])
				script = script[1:]
			}
			ts += uint32(arg)
			var kind av.Kind
			var payload []byte
			switch op % 12 {
			case 0:
				h.Begin(PublisherInfo{})
				offered += map[bool]int{true: 2, false: 1}[live]
				live = true
				continue
			case 1:
				if live {
					offered++
				}
				h.End()
				live = false
				continue
			case 2:
				kind, payload = av.KindVideo, idr
			case 3:
				kind, payload = av.KindVideo, pRef
			case 4:
				kind, payload = av.KindVideo, bDisp
			case 5:
				kind, payload = av.KindAudio, aacRaw
			case 6:
				kind, payload = av.KindVideo, avcSeq
			case 7:
				kind, payload = av.KindData, metaMsg
			case 8:
				pending(v)
				pending(l)
				continue
			case 9:
				if churn != nil {
					churn.Close()
				}
				churn = h.Subscribe(SubscribeOptions{Lossless: arg%2 == 0})
				continue
			case 10:
				n := min(arg, len(script))
				kind, payload = av.Kind(arg%5), script[:n]
				script = script[n:]
			case 11:
				ts -= uint32(arg) * 2 // timestamps going back
				kind, payload = av.KindAudio, aacRaw
			}
			if live && kind >= av.KindAudio && kind <= av.KindData {
				offered++
			}
			h.Write(kind, ts, payload)
		}
		for _, s := range []*Subscriber{v, l} {
			if s.Err() != nil {
				continue
			}
			in := s.Info()
			if got := int(in.Sent+in.Dropped) + in.Queued; got != offered {
				t.Fatalf("%s: sent %d + dropped %d + queued %d != offered %d", in.Kind, in.Sent, in.Dropped, in.Queued, offered)
			}
		}
		h.Info()
	})
}
