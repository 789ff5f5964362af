package ingest

import (
	"context"
	"log/slog"
	"sync"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/hub"
	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// Config of the publish side.
type Config struct {
	Auth Auth
	// Takeover lets a new publisher replace the live one on the same name
	// (default false: the newcomer is refused with NetStream.Publish.BadName).
	Takeover bool
}

// Ingest accepts broadcasters into hubs.
type Ingest struct {
	cfg  Config
	hubs *hub.Registry
	log  *slog.Logger

	mu   sync.Mutex
	live map[string]*publisher // app/name → current publisher
	// OnPublish and OnUnpublish, when set, are told about stream start and
	// stop (the control plane announces them). They must not block.
	OnPublish   func(app, name, addr string)
	OnUnpublish func(app, name string)
}

// New returns the ingest of a primary.
func New(cfg Config, hubs *hub.Registry, log *slog.Logger) *Ingest {
	return &Ingest{cfg: cfg, hubs: hubs, log: log.With("component", "ingest"), live: map[string]*publisher{}}
}

// Publish implements relay.PublishFunc.
func (in *Ingest) Publish(ctx context.Context, s *rtmp.Session, req *rtmp.StreamRequest) (rtmp.Publisher, error) {
	if err := in.cfg.Auth.Check(req.App, req.Name, req.Query.Get("key"), req.Query.Get("token")); err != nil {
		return nil, rtmp.Status{Level: "error", Code: rtmp.CodePublishUnauthorized, Description: err.Error()}
	}
	key := req.App + "/" + req.Name
	in.mu.Lock()
	old := in.live[key]
	if old != nil && !in.cfg.Takeover {
		in.mu.Unlock()
		return nil, rtmp.Status{Level: "error", Code: rtmp.CodePublishBadName, Description: key + " is already being published"}
	}
	p := &publisher{in: in, key: key, app: req.App, name: req.Name, session: s, streamID: req.StreamID, publishID: newPublishID()}
	in.live[key] = p
	in.mu.Unlock()
	if old != nil {
		in.log.Info("publisher taken over", "stream", key, "old", old.session.RemoteAddr(), "new", s.RemoteAddr())
		old.session.Conn.Send(rtmp.StatusMessage(old.streamID, rtmp.Status{Level: "error", Code: rtmp.CodePublishBadName, Description: "another publisher took over " + key}))
		old.session.Conn.CloseAfterFlush(rtmp.ErrClosed)
		old.Close()
	}
	p.hub = in.hubs.Acquire(req.App, req.Name)
	p.hub.Begin(hub.PublisherInfo{Addr: s.RemoteAddr(), ID: s.ID})
	in.log.Info("stream started", "stream", key, "publisher", s.RemoteAddr())
	if in.OnPublish != nil {
		in.OnPublish(req.App, req.Name, s.RemoteAddr())
	}
	return p, nil
}

// Live lists the streams being published.
func (in *Ingest) Live() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]string, 0, len(in.live))
	for k := range in.live {
		out = append(out, k)
	}
	return out
}

type publisher struct {
	in        *Ingest
	key       string
	app, name string
	session   *rtmp.Session
	streamID  uint32 // the message stream it publishes on
	hub       *hub.Hub
	once      sync.Once
	publishID string // names this publishing session across the mesh
}

func (p *publisher) Write(kind av.Kind, ts uint32, payload []byte) {
	if kind == av.KindData {
		payload = withPublishID(payload, p.publishID)
	}
	p.hub.Write(kind, ts, payload)
}

func (p *publisher) Close() {
	p.once.Do(func() {
		p.in.mu.Lock()
		current := p.in.live[p.key] == p
		if current {
			delete(p.in.live, p.key)
		}
		p.in.mu.Unlock()
		if p.hub != nil {
			if current {
				p.hub.End()
			}
			p.hub.Release()
		}
		p.in.log.Info("stream stopped", "stream", p.key)
		if current && p.in.OnUnpublish != nil {
			p.in.OnUnpublish(p.app, p.name)
		}
	})
}
