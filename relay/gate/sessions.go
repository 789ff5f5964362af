package gate

import (
	"context"
	"sync"
	"time"

	"github.com/relaymesh/relaymesh/internal/hooks"
)

// HTTPIdle is how long an HLS/DASH viewer may go without a request before
// its session counts as stopped (on_stop).
const HTTPIdle = 30 * time.Second

// maxSessions bounds the HLS/DASH sessions followed for on_stop; beyond it
// new sessions get no on_stop.
const maxSessions = 100_000

// httpSessions follows HLS/DASH viewers, by protocol, stream and address
// (viewers behind one address count as one), from their entry playlist to
// their last request.
type httpSessions struct {
	mu sync.Mutex
	m  map[sessionKey]*httpSession
}

type sessionKey struct{ proto, app, name, ip string }

type httpSession struct {
	first, last time.Time
	b           hooks.Body
}

// touch notes a request; an entry request (index.m3u8, manifest.mpd)
// starts a session that is not followed yet.
func (s *httpSessions) touch(k sessionKey, entry bool, b hooks.Body, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := s.m[k]; v != nil {
		v.last = now
		return
	}
	if !entry || len(s.m) >= maxSessions {
		return
	}
	if s.m == nil {
		s.m = map[sessionKey]*httpSession{}
	}
	s.m[k] = &httpSession{first: now, last: now, b: b}
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

// Run sends on_stop for HLS/DASH viewers gone idle, until ctx ends.
func (g *Gate) Run(ctx context.Context) {
	if g == nil || !g.cfg.Hooks.Has(hooks.OnStop) {
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
				g.notify(b)
			}
		}
	}
}
