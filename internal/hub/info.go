package hub

// Info is a snapshot of a hub for the streams API.
type Info struct {
	App           string           `json:"app"`
	Name          string           `json:"name"`
	Live          bool             `json:"live"`
	PublisherAddr string           `json:"publisher_addr,omitempty"`
	PublisherID   string           `json:"publisher_id,omitempty"`
	VideoCodec    string           `json:"video_codec,omitempty"` // "h264", "hevc", …
	AudioCodec    string           `json:"audio_codec,omitempty"` // "aac", "mp3", …
	Width         int              `json:"width,omitempty"`
	Height        int              `json:"height,omitempty"`
	BitrateKbps   int              `json:"bitrate_kbps"` // over the last few seconds of media time
	Viewers       int              `json:"viewers"`      // subscribers under the drop policy
	FramesIn      uint64           `json:"frames_in"`
	GOPCacheSize  int              `json:"gop_cache_frames"`
	Subscribers   []SubscriberInfo `json:"subscribers"`
}

// Info returns a snapshot of the hub and its subscribers.
func (h *Hub) Info() Info {
	h.mu.Lock()
	in := Info{
		App:          h.app,
		Name:         h.name,
		Live:         h.live,
		FramesIn:     h.framesIn,
		GOPCacheSize: len(h.gop.frames),
	}
	if h.live {
		in.PublisherAddr, in.PublisherID = h.pub.Addr, h.pub.ID
		in.VideoCodec, in.AudioCodec = h.params.videoCodec, h.params.audioCodec
		in.Width, in.Height = h.params.size()
		in.BitrateKbps = h.rate.kbps(h.lastTS)
	}
	h.mu.Unlock()
	subs := *h.subs.Load()
	in.Subscribers = make([]SubscriberInfo, 0, len(subs))
	for _, s := range subs {
		si := s.Info()
		if si.Kind == "viewer" {
			in.Viewers++
		}
		in.Subscribers = append(in.Subscribers, si)
	}
	return in
}
