package gate

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaymesh/relaymesh/internal/hooks"
	"github.com/relaymesh/relaymesh/internal/playtoken"
)

// refusals counts refused plays and publishes by protocol and reason.
var refusalsOpts = prometheus.CounterOpts{Name: "relaymesh_gate_refused_total",
	Help: "Plays and publishes refused by play authorization or a hook, by proto (rtmp, hls, dash, rtmp_publish) and reason."}

// Register adds the gate's metrics to reg.
func (g *Gate) Register(reg prometheus.Registerer) error {
	if g == nil {
		return nil
	}
	return reg.Register(g.refused)
}

// reason is the metric label of a refusal.
func reason(err error) string {
	var d *hooks.Denied
	switch {
	case errors.Is(err, ErrNoCredentials):
		return "no_credentials"
	case errors.Is(err, ErrBadKey):
		return "bad_key"
	case errors.Is(err, playtoken.ErrExpired):
		return "token_expired"
	case errors.Is(err, playtoken.ErrSignature), errors.Is(err, playtoken.ErrMalformed), errors.Is(err, playtoken.ErrNoSecret):
		return "bad_token"
	case errors.As(err, &d):
		return "hook_refused"
	case errors.Is(err, hooks.ErrUnavailable):
		return "hook_unavailable"
	}
	return "other"
}

func (g *Gate) count(proto string, err error) {
	g.refused.WithLabelValues(proto, reason(err)).Inc()
}
