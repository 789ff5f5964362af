package gate

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/relaymesh/relaymesh/internal/hooks"
	"github.com/relaymesh/relaymesh/internal/playtoken"
)

// HTTPIdle is how long an HLS/DASH viewer may go without a request before
// its session counts as stopped (on_stop, and its token no longer carries
// it past its expiry).
const HTTPIdle = 30 * time.Second

// SessionMax bounds how long past its expiry a token keeps an active
// HLS/DASH session playing.
const SessionMax = 24 * time.Hour

// maxSessions bounds the HLS/DASH sessions followed; beyond it new
// sessions get no on_stop and no playing past their token's expiry.
const maxSessions = 100_000

// httpSessions follows HLS/DASH viewers, by protocol, stream and address
// (viewers behind one address count as one), from their first allowed
// request to their last.
type httpSessions struct {
	mu sync.Mutex
	m  map[sessionKey]*httpSession
}

type sessionKey struct{ proto, app, name, ip string }

type httpSession struct {
	first, last time.Time
	b           hooks.Body
}

// touch notes an allowed request, starting the session if needed.
func (s *httpSessions) touch(k sessionKey, b hooks.Body, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := s.m[k]; v != nil {
		v.last = now
		return
	}
	if len(s.m) >= maxSessions {
		return
	}
	if s.m == nil {
		s.m = map[sessionKey]*httpSession{}
	}
	s.m[k] = &httpSession{first: now, last: now, b: b}
}

// active reports whether k made a request less than HTTPIdle ago.
func (s *httpSessions) active(k sessionKey, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.m[k]
	return v != nil && now.Sub(v.last) < HTTPIdle
}

// expire removes the sessions idle since before now-idle and returns their
// on_stop bodies.
func (s *httpSessions) expire(now time.Time, idle time.Duration) []hooks.Body {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []hooks.Body
	for k, v := range s.m {
		if now.Sub(v.last) >= idle {
			b := v.b
			b.Action, b.Time = hooks.OnStop, ""
			b.Duration = v.last.Sub(v.first).Round(time.Millisecond).String()
			out = append(out, b)
			delete(s.m, k)
		}
	}
	return out
}

// Run ends the HLS/DASH sessions gone idle, telling on_stop, until ctx
// ends.
func (g *Gate) Run(ctx context.Context) {
	if !g.followsSessions() {
		return
	}
	t := time.NewTicker(HTTPIdle / 6)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, b := range g.sessions.expire(now, HTTPIdle) {
				if !g.cfg.Hooks.Has(hooks.OnStop) {
					continue
				}
				g.notify(b)
			}
		}
	}
}

// followsSessions: sessions are followed for protected applications
// (expired tokens of active sessions) and for on_stop.
func (g *Gate) followsSessions() bool {
	return g != nil && (len(g.protect) > 0 || g.cfg.Hooks.Has(hooks.OnStop))
}

// carriesOn reports whether err, a token's expiry, is forgiven: the token
// is genuine, expired less than SessionMax ago, and its viewer's session is
// active, so a viewer keeps playing while it keeps requesting.
func (g *Gate) carriesOn(err error, cred string, k sessionKey, now time.Time) bool {
	if !errors.Is(err, playtoken.ErrExpired) {
		return false
	}
	t, perr := playtoken.Parse(cred)
	if perr != nil || now.Unix()-t.Expiry > int64(SessionMax/time.Second) {
		return false
	}
	return g.sessions.active(k, now)
}
