package hub

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/codec"
)

// PublisherInfo identifies the publishing session of a hub.
type PublisherInfo struct {
	Addr string // remote address
	ID   string // connection id
}

// ringSlack is room above a viewer's frame limit for frames that are never
// dropped (sequence headers, data, events) while media is being dropped.
const ringSlack = 64

// Hub is the fan-out point of one stream (app + name). One publisher at a
// time writes into it between Begin and End; any number of subscribers read.
type Hub struct {
	reg       *Registry
	app, name string
	cfg       Config
	log       *slog.Logger

	// subs is the copy-on-write subscriber list: replaced (under mu) when a
	// subscriber joins or leaves, read without a lock.
	subs atomic.Pointer[[]*Subscriber]

	refs int // guarded by reg.mu

	mu       sync.Mutex
	removed  bool // no longer in the registry
	live     bool
	pub      PublisherInfo
	sessions int

	// Timestamp rebasing across sessions.
	hasLast    bool   // a frame has been delivered
	lastTS     uint32 // the latest timestamp delivered
	needBase   bool   // the session's offset is set by its first frame
	offset     uint32 // added to the session's timestamps (mod 2^32)
	floor      uint32 // no frame of the session goes below this
	floorValid bool

	nalLen           int
	meta, vseq, aseq *av.Frame // latest metadata and sequence headers of the session
	gop              gopCache
	arrival          arrivalClock
	params           streamParams
	rate             bitrate

	framesIn uint64
	bytesIn  uint64    // payload bytes written by publishers
	retired  subTotals // counters of subscribers that have left
	labelled bool      // has its own app/stream labels (metrics.go); guarded by reg.mu
}

// subTotals sums the counters of subscribers.
type subTotals struct {
	sent      uint64
	sentBytes uint64
	dropped   DropCounts
	tooSlow   uint64 // subscribers closed with ErrTooSlow
	overflw   uint64 // subscribers closed with ErrOverflow
}

func newHub(reg *Registry, app, name string) *Hub {
	h := &Hub{reg: reg, app: app, name: name, cfg: reg.cfg,
		log: reg.log.With("app", app, "stream", name)}
	h.gop.maxFrames, h.gop.maxB = reg.cfg.GOPCacheMaxFrames, reg.cfg.GOPCacheMaxBytes
	empty := []*Subscriber{}
	h.subs.Store(&empty)
	return h
}

// App returns the application name of the stream.
func (h *Hub) App() string { return h.app }

// Name returns the stream name.
func (h *Hub) Name() string { return h.name }

// Live reports whether a publishing session is in progress.
func (h *Hub) Live() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.live
}

// SubscriberCount returns the number of subscribers.
func (h *Hub) SubscriberCount() int { return len(*h.subs.Load()) }

// Begin starts a publishing session: subscribers receive an
// av.EventPublish frame, and the session's timestamps are rebased so that
// they continue after the last timestamp delivered. Begin during a session
// ends that session first.
func (h *Hub) Begin(info PublisherInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live {
		h.endLocked()
	}
	h.live = true
	h.pub = info
	h.sessions++
	h.needBase = h.hasLast
	h.offset = 0
	h.floorValid = false
	h.nalLen = 0
	h.meta, h.vseq, h.aseq = nil, nil, nil
	h.gop.reset()
	h.params = streamParams{}
	h.rate.reset()
	h.log.Info("publish begins", "addr", info.Addr, "id", info.ID, "session", h.sessions)
	h.fanout(av.NewEvent(av.EventPublish, h.lastTS), h.lastTS, 0)
}

// End ends the publishing session: subscribers receive av.EventUnpublish
// and stay subscribed (a later Begin continues the stream); the GOP cache,
// metadata and sequence headers are dropped.
func (h *Hub) End() {
	h.mu.Lock()
	if !h.live {
		h.mu.Unlock()
		return
	}
	h.endLocked()
	h.mu.Unlock()
	h.reg.maybeRemove(h)
}

func (h *Hub) endLocked() {
	h.live = false
	h.meta, h.vseq, h.aseq = nil, nil, nil
	h.gop.reset()
	h.log.Info("publish ends", "addr", h.pub.Addr, "id", h.pub.ID, "session", h.sessions)
	h.fanout(av.NewEvent(av.EventUnpublish, h.lastTS), h.lastTS, 0)
}

// Write adds one frame of the current session: it takes payload over (the
// caller must not modify it afterwards: the RTMP chunk reader hands over a
// fresh buffer per message, so nothing is copied on the way to the
// viewers), classifies it (with the NAL length size of the session's AVC
// sequence header), queues it for every subscriber and returns; it never
// blocks on a subscriber.
// Frames outside a session (before Begin, after End) and kinds other than
// audio, video and data are ignored.
func (h *Hub) Write(kind av.Kind, ts uint32, payload []byte) {
	if kind != av.KindAudio && kind != av.KindVideo && kind != av.KindData {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.live {
		return
	}
	ts = h.rebase(ts)
	var avc *codec.AVC // a new AVC configuration, read once for the frames' NAL length and Info
	if kind == av.KindVideo && len(payload) > 1 && payload[0]&0x0f == av.CodecAVC && payload[1] == 0 {
		if c, err := codec.ParseAVC(payload); err == nil {
			h.nalLen, avc = c.NALLengthSize, c
		}
	}
	f := av.Wrap(kind, ts, payload, h.nalLen)
	switch {
	case f.SeqHeader && kind == av.KindVideo:
		h.vseq = f
	case f.SeqHeader && kind == av.KindAudio:
		h.aseq = f
	case f.Metadata:
		h.meta = f
	default:
		h.gop.add(f)
	}
	h.params.observe(f, avc)
	h.rate.add(ts, len(payload))
	h.framesIn++
	h.bytesIn += uint64(len(payload))
	if !h.hasLast || int32(ts-h.lastTS) > 0 {
		h.lastTS, h.hasLast = ts, true
	}
	at, wall := ts, uint32(0)
	if f.Droppable() {
		now := h.reg.now()
		at, wall = h.arrival.arrive(ts, now), uint32(now)
	}
	h.fanout(f, at, wall)
}

// rebase maps a timestamp of the session onto the hub's timeline.
func (h *Hub) rebase(ts uint32) uint32 {
	if h.needBase {
		h.needBase = false
		h.floor = h.lastTS + 1
		h.floorValid = true
		h.offset = h.floor - ts
	}
	out := ts + h.offset
	if h.floorValid && int32(out-h.floor) < 0 {
		out = h.floor
	}
	return out
}

// fanout offers f, which arrived at media time at (see arrivalClock) and
// wall time wall (ms), to every subscriber and drops those the policy
// closes. h.mu is held.
func (h *Hub) fanout(f *av.Frame, at, wall uint32) {
	f.Arrived = av.Monotonic() // before any subscriber can see f
	subs := *h.subs.Load()
	failed := 0
	for _, s := range subs {
		wake, fail := s.offer(f, at, wall)
		if fail != nil {
			s.mu.Lock()
			s.closeLocked(fail, fail)
			s.mu.Unlock()
			failed++
			continue
		}
		if wake {
			s.wake()
		}
	}
	if failed == 0 {
		return
	}
	keep := make([]*Subscriber, 0, len(subs)-failed)
	for _, s := range subs {
		s.mu.Lock()
		reason := s.reason
		s.mu.Unlock()
		if reason == nil {
			keep = append(keep, s)
			continue
		}
		// Logged at debug: the subscriber's owner logs the close once (an
		// RTMP viewer's session, with this reason).
		h.log.Debug("subscriber closed", "id", s.id, "addr", s.addr, "reason", reason)
		h.retireLocked(s)
	}
	h.subs.Store(&keep)
}

// retireLocked folds a leaving subscriber's counters into the hub's totals.
// h.mu is held; s is closed (its counters no longer change).
func (h *Hub) retireLocked(s *Subscriber) {
	s.listed = false
	s.mu.Lock()
	defer s.mu.Unlock()
	h.retired.sent += s.sent
	h.retired.sentBytes += s.sentBytes
	h.retired.dropped.add(s.dropped)
	switch s.reason {
	case ErrTooSlow:
		h.retired.tooSlow++
	case ErrOverflow:
		h.retired.overflw++
	}
}

// Subscribe adds a subscriber. On a live stream its queue starts with the
// latest metadata, the video and audio sequence headers and the GOP cache;
// if no keyframe is cached, its video starts at the next keyframe.
func (h *Hub) Subscribe(o SubscribeOptions) *Subscriber {
	h.mu.Lock()
	defer h.mu.Unlock()
	var burst []*av.Frame
	if h.live {
		for _, f := range []*av.Frame{h.meta, h.vseq, h.aseq} {
			if f != nil {
				burst = append(burst, f)
			}
		}
		burst = append(burst, h.gop.frames...)
	}
	s := &Subscriber{
		hub:        h,
		lossless:   o.Lossless,
		id:         o.ID,
		addr:       o.Addr,
		notify:     o.Notify,
		wakeFn:     o.Wake,
		done:       make(chan struct{}),
		queueMS:    h.cfg.ViewerQueue.Milliseconds(),
		batchMS:    h.cfg.WriteBatch.Milliseconds(),
		timeoutMS:  h.cfg.SlowViewerTimeout.Milliseconds(),
		waitKey:    !h.live || !h.gop.active,
		listed:     true,
		joinedLive: h.live,
	}
	if s.notify == nil {
		s.notify = make(chan struct{}, 1)
	}
	bound := len(burst)
	if o.Lossless {
		s.limit = h.cfg.LosslessQueueFrames
		bound += s.limit
	} else {
		s.limit = h.cfg.ViewerQueueFrames
		bound += s.limit + max(ringSlack, s.limit/16)
	}
	s.q = newQueue(len(burst)+initialQueue, bound, !o.Lossless)
	for _, f := range burst {
		s.q.push(f, true, 0, 0)
	}
	old := *h.subs.Load()
	subs := make([]*Subscriber, len(old), len(old)+1)
	copy(subs, old)
	subs = append(subs, s)
	h.subs.Store(&subs)
	return s
}

// unsubscribe removes a closed subscriber from the list.
func (h *Hub) unsubscribe(s *Subscriber) {
	h.mu.Lock()
	if !s.listed {
		h.mu.Unlock()
		return
	}
	old := *h.subs.Load()
	subs := make([]*Subscriber, 0, len(old))
	for _, o := range old {
		if o != s {
			subs = append(subs, o)
		}
	}
	h.subs.Store(&subs)
	h.retireLocked(s)
	h.mu.Unlock()
	h.reg.maybeRemove(h)
}

// totalsLocked sums the counters of current and past subscribers. h.mu is held.
func (h *Hub) totalsLocked() subTotals {
	t := h.retired
	for _, s := range *h.subs.Load() {
		s.mu.Lock()
		t.sent += s.sent
		t.sentBytes += s.sentBytes
		t.dropped.add(s.dropped)
		s.mu.Unlock()
	}
	return t
}

// Release drops a reference taken by Registry.Acquire. A hub with no
// references, no session and no subscribers leaves the registry.
func (h *Hub) Release() { h.reg.release(h) }
