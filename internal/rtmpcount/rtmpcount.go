// Package rtmpcount counts what an RTMP server accepts and refuses:
// connects, publishes and plays, by outcome (accepted, or the status code
// of the refusal), as relaymesh_rtmp_requests_total{op, result}.
package rtmpcount

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// Counter holds the counts; Wrap puts it in front of a handler.
type Counter struct {
	vec *prometheus.CounterVec
}

// New returns a counter registered on reg.
func New(reg prometheus.Registerer) (*Counter, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "relaymesh_rtmp_requests_total",
		Help: "RTMP connects, publishes and plays by outcome: accepted, or the status code that refused them (NetStream.Publish.Unauthorized, …), or error.",
	}, []string{"op", "result"})
	if err := reg.Register(vec); err != nil {
		return nil, err
	}
	for _, op := range []string{"connect", "publish", "play"} {
		vec.WithLabelValues(op, "accepted")
	}
	return &Counter{vec: vec}, nil
}

// result names an outcome; status codes come from the server itself, so
// the label's values are bounded.
func result(err error) string {
	if err == nil {
		return "accepted"
	}
	var st rtmp.Status
	if errors.As(err, &st) && st.Code != "" && len(st.Code) <= 64 {
		return st.Code
	}
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	return "error"
}

// Wrap returns h counting its decisions.
func (c *Counter) Wrap(h rtmp.Handler) rtmp.Handler { return &handler{Handler: h, c: c} }

type handler struct {
	rtmp.Handler
	c *Counter
}

func (h *handler) Connect(ctx context.Context, s *rtmp.Session, req *rtmp.ConnectRequest) error {
	err := h.Handler.Connect(ctx, s, req)
	h.c.vec.WithLabelValues("connect", result(err)).Inc()
	return err
}

func (h *handler) Publish(ctx context.Context, s *rtmp.Session, req *rtmp.StreamRequest) (rtmp.Publisher, error) {
	p, err := h.Handler.Publish(ctx, s, req)
	h.c.vec.WithLabelValues("publish", result(err)).Inc()
	return p, err
}

func (h *handler) Play(ctx context.Context, s *rtmp.Session, req *rtmp.StreamRequest) (rtmp.MediaSource, error) {
	m, err := h.Handler.Play(ctx, s, req)
	h.c.vec.WithLabelValues("play", result(err)).Inc()
	return m, err
}
