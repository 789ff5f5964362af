package serve

import (
	"context"
	"log/slog"
	"time"

	"github.com/relaymesh/relaymesh/internal/hub"
	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// PublishFunc accepts or refuses a broadcaster (the primary's ingest).
type PublishFunc func(ctx context.Context, s *rtmp.Session, req *rtmp.StreamRequest) (rtmp.Publisher, error)

// Sessions is what a server keeps beside media for each connection: shared
// objects and RPC (the primary's authority, a relay's proxy of it). The
// handler calls it from the connection's read goroutine.
type Sessions interface {
	// Connected: the connect was accepted.
	Connected(s *rtmp.Session, req *rtmp.ConnectRequest)
	// Published: the connection became a stream's broadcaster.
	Published(s *rtmp.Session)
	// Message gets what is neither publish nor play: shared-object
	// messages, RPC calls and results.
	Message(ctx context.Context, s *rtmp.Session, m rtmp.Message)
	// Closed: the connection ended.
	Closed(s *rtmp.Session)
}

// Options configure the RTMP side of a primary or a relay.
type Options struct {
	Hubs     *hub.Registry
	Upstream Puller      // relays: where streams are pulled from; nil on the primary
	Publish  PublishFunc // the primary: accepts broadcasters; nil on relays (publish refused)
	Sessions Sessions    // shared objects and RPC; optional
	// Grace keeps viewers connected after the broadcaster stops, waiting for
	// it to come back (default 30s).
	Grace time.Duration
	Log   *slog.Logger
}

// Handler implements rtmp.Handler for viewers, downstream relays and,
// through Options.Publish, broadcasters.
type Handler struct {
	o Options
}

// NewHandler returns the RTMP handler of a server.
func NewHandler(o Options) *Handler {
	if o.Grace <= 0 {
		o.Grace = 30 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Handler{o: o}
}

// Connect accepts every application: streams are named by app and name.
func (h *Handler) Connect(ctx context.Context, s *rtmp.Session, req *rtmp.ConnectRequest) error {
	if h.o.Sessions != nil {
		h.o.Sessions.Connected(s, req)
	}
	return nil
}

// Publish hands broadcasters to the primary's ingest; relays refuse them.
func (h *Handler) Publish(ctx context.Context, s *rtmp.Session, req *rtmp.StreamRequest) (rtmp.Publisher, error) {
	if h.o.Publish == nil {
		return nil, rtmp.Status{Level: "error", Code: rtmp.CodePublishBadName, Description: "this server is a relay: publish to the primary"}
	}
	p, err := h.o.Publish(ctx, s, req)
	if err == nil && h.o.Sessions != nil {
		h.o.Sessions.Published(s)
	}
	return p, err
}

// IsRelay reports whether the session is a downstream relay.
func IsRelay(s *rtmp.Session) bool {
	return s.ConnectInfo().FromRelay() // also called from a draining server's goroutine
}

// Play serves a viewer (drop policy) or a downstream relay (every frame)
// from the stream's hub, pulling it from upstream first on a relay.
func (h *Handler) Play(ctx context.Context, s *rtmp.Session, req *rtmp.StreamRequest) (rtmp.MediaSource, error) {
	if h.o.Upstream != nil {
		if err := h.o.Upstream.Ensure(ctx, req.App, req.Name, req.RawQuery); err != nil {
			if _, ok := err.(rtmp.Status); ok {
				return nil, err
			}
			return nil, rtmp.Status{Level: "error", Code: rtmp.CodePlayStreamNotFound, Description: "upstream: " + err.Error()}
		}
	} else if !published(h.o.Hubs.Lookup(req.App, req.Name)) {
		// The primary: nobody publishes the stream, and nobody waits for
		// its broadcaster to come back (Grace). Say so at once rather than
		// let the player wait for a stream that may never come.
		return nil, rtmp.Status{Level: "error", Code: rtmp.CodePlayStreamNotFound, Description: req.App + "/" + req.Name + " is not published"}
	}
	hb := h.o.Hubs.Acquire(req.App, req.Name)
	kind := "viewer"
	if IsRelay(s) {
		kind = "relay"
	}
	s.Log.Debug("subscribing", "stream", req.App+"/"+req.Name, "as", kind)
	return newViewer(hb, s.MediaReady, hub.SubscribeOptions{Lossless: IsRelay(s), ID: s.ID, Addr: s.RemoteAddr()}, h.o.Grace), nil
}

// published reports whether a primary's hub has a broadcaster, or viewers
// that wait for it within the grace period after it left.
func published(hb *hub.Hub) bool {
	return hb != nil && (hb.Live() || hb.SubscriberCount() > 0)
}

// Message passes shared-object and RPC traffic to Options.Sessions.
func (h *Handler) Message(ctx context.Context, s *rtmp.Session, m rtmp.Message) {
	if h.o.Sessions != nil {
		h.o.Sessions.Message(ctx, s, m)
	}
}

// Closed is called when a session ends.
func (h *Handler) Closed(s *rtmp.Session, err error) {
	if h.o.Sessions != nil {
		h.o.Sessions.Closed(s)
	}
}

// Puller brings a stream into the hubs before a viewer plays it: a relay's
// upstream pulls (package relay/pull). The primary has none.
type Puller interface {
	// Ensure returns once app/name is pulled (or being pulled and live),
	// or with the reason it cannot be; query is the player's (a play token).
	Ensure(ctx context.Context, app, name, query string) error
}
