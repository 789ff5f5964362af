package gate

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/relaymesh/relaymesh/internal/hooks"
	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// Wrap returns h with the gate in front of its Play and Publish. A refused
// viewer gets NetStream.Play.Failed with the reason; a refused broadcaster
// NetStream.Publish.BadName (or what the hook's refusal maps to). The
// credentials are taken out of the play request before h sees it, so they
// are neither passed upstream nor kept.
func (g *Gate) Wrap(h rtmp.Handler) rtmp.Handler {
	if !g.Active() {
		return h
	}
	return &handler{Handler: h, g: g}
}

type handler struct {
	rtmp.Handler
	g *Gate
}

func (h *handler) body(action string, s *rtmp.Session, req *rtmp.StreamRequest) hooks.Body {
	b := hooks.Body{Action: action, ClientID: s.ID, IP: hostOf(s.RemoteAddr()), Proto: "rtmp",
		App: req.App, Stream: req.Name, Param: req.RawQuery}
	if s.Connect != nil {
		b.TCURL = s.Connect.TCURL
		if id, ok := s.Connect.Object[rtmp.RelayMarker].(string); ok {
			b.Relay = id
		}
	}
	return b
}

func (h *handler) Play(ctx context.Context, s *rtmp.Session, req *rtmp.StreamRequest) (rtmp.MediaSource, error) {
	q := req.Query
	if q.Get(TokenParam) == "" && q.Get(KeyParam) == "" && s.Connect != nil && s.Connect.Query != "" {
		// Some clients put the credential on the application
		// (rtmp://host/live?token=…/cam): it comes with connect.
		if cq, err := url.ParseQuery(s.Connect.Query); err == nil {
			q = cq
		}
	}
	if err := h.g.Check(req.App, req.Name, q); err != nil {
		h.g.count("rtmp", err)
		return nil, rtmp.Status{Level: "error", Code: rtmp.CodePlayFailed, Description: err.Error()}
	}
	b := h.body(hooks.OnPlay, s, req)
	if err := h.g.hook(ctx, b); err != nil {
		h.g.count("rtmp", err)
		return nil, rtmp.Status{Level: "error", Code: rtmp.CodePlayFailed, Description: err.Error()}
	}
	if sq := stripCredentials(req.Query); len(sq) != len(req.Query) {
		r := *req
		r.Query, r.RawQuery = sq, sq.Encode()
		req = &r
		b.Param = r.RawQuery
	}
	src, err := h.Handler.Play(ctx, s, req)
	if err != nil || !h.g.cfg.Hooks.Has(hooks.OnStop) {
		return src, err
	}
	b.Action = hooks.OnStop
	b.Time = ""
	return &stopSource{MediaSource: src, g: h.g, b: b, start: time.Now()}, nil
}

func (h *handler) Publish(ctx context.Context, s *rtmp.Session, req *rtmp.StreamRequest) (rtmp.Publisher, error) {
	b := h.body(hooks.OnPublish, s, req)
	if err := h.g.hook(ctx, b); err != nil {
		h.g.count("rtmp_publish", err)
		return nil, rtmp.Status{Level: "error", Code: rtmp.CodePublishBadName, Description: err.Error()}
	}
	p, err := h.Handler.Publish(ctx, s, req)
	if err != nil || !h.g.cfg.Hooks.Has(hooks.OnUnpublish) {
		return p, err
	}
	b.Action = hooks.OnUnpublish
	return &unpublisher{Publisher: p, g: h.g, b: b, start: time.Now()}, nil
}

// stopSource tells on_stop when the viewer's source closes.
type stopSource struct {
	rtmp.MediaSource
	g     *Gate
	b     hooks.Body
	start time.Time
	once  sync.Once
}

func (s *stopSource) Close() {
	s.MediaSource.Close()
	s.once.Do(func() {
		s.b.Duration = time.Since(s.start).Round(time.Millisecond).String()
		s.g.notify(s.b)
	})
}

// unpublisher tells on_unpublish when the broadcaster stops.
type unpublisher struct {
	rtmp.Publisher
	g     *Gate
	b     hooks.Body
	start time.Time
	once  sync.Once
}

func (p *unpublisher) Close() {
	p.Publisher.Close()
	p.once.Do(func() {
		p.b.Duration = time.Since(p.start).Round(time.Millisecond).String()
		p.g.notify(p.b)
	})
}
