package serve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// Server accepts RTMP connections and runs each with a handler.
type Server struct {
	Handler rtmp.Handler
	Conn    rtmp.ConnConfig
	Log     *slog.Logger
	// MaxConns bounds concurrent connections (0: unlimited).
	MaxConns int
	// Leave is what the server tells its players when it drains (their
	// streams stop, they are told where to go, and get the drain to leave);
	// downstream relays are not told (they keep their stream until the
	// drain ends). Its Description defaults to "server draining".
	Leave rtmp.LeaveNotice
	// Skip, when set, excludes sessions from the notice (downstream relays).
	Skip func(*rtmp.Session) bool
	// Rounds tunes the rounds in which connections are written when
	// Conn.WriteBatch is set.
	Rounds rtmp.FlusherConfig

	mu     sync.Mutex
	active int
	wg     sync.WaitGroup
}

// connDone counts a connection's end.
func (s *Server) connDone() {
	s.mu.Lock()
	s.active--
	s.mu.Unlock()
	s.wg.Done()
}

// Active is the number of open connections.
func (s *Server) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// Serve accepts on ln until ctx ends. It then tells its players to leave
// (Leave), stops accepting (with a redirect configured: once no connection
// is left, a client connecting meanwhile is refused with the redirect) and
// gives open connections up to drain to finish before closing them.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	connCtx, closeConns := context.WithCancelCause(context.WithoutCancel(ctx))
	defer closeConns(nil)
	cc := s.Conn
	if cc.Sessions == nil {
		cc.Sessions = rtmp.NewSessions()
	}
	if cc.WriteBatch > 0 && cc.Flusher == nil {
		// Write every connection in rounds of WriteBatch from a few
		// workers rather than from a goroutine per viewer.
		cc.Flusher = rtmp.NewAdaptiveFlusher(connCtx, cc.WriteBatch, s.Rounds)
	}
	drainEnd := make(chan time.Time, 1)
	go func() {
		<-ctx.Done()
		drainEnd <- time.Now().Add(drain)
		if drain > 0 {
			n := s.Leave
			if n.Description == "" {
				n.Description = "server draining"
			}
			told := cc.Sessions.Leave(n, s.Skip)
			s.Log.Info("draining RTMP connections", "open", s.Active(), "viewers_told", told, "for", drain)
			if n.Redirect != nil || n.ConnectRedirect != nil {
				// Keep accepting while connections remain: a client that
				// connects again here is told where to go.
				deadline := time.Now().Add(drain)
				for s.Active() > 0 && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}
		ln.Close()
	}()
	var err error
	for {
		nc, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() == nil && !errors.Is(aerr, net.ErrClosed) {
				var ne net.Error
				if errors.As(aerr, &ne) && ne.Timeout() {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				err = aerr
			}
			break
		}
		s.mu.Lock()
		if s.MaxConns > 0 && s.active >= s.MaxConns {
			s.mu.Unlock()
			s.Log.Warn("connection limit reached, refusing", "remote", nc.RemoteAddr().String(), "max", s.MaxConns)
			cc.Metrics.ConnectionRefused()
			nc.Close()
			continue
		}
		s.active++
		s.mu.Unlock()
		s.wg.Add(1)
		// No defers here: their records would sit on the stack of a
		// goroutine that waits for its peer all its life (see rtmp.Serve).
		go func() {
			rtmp.Serve(connCtx, nc, &cc, s.Handler, s.Log)
			s.connDone()
		}()
	}
	// Drain: let connections end on their own for a while, then close them.
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	var end time.Time
	select {
	case end = <-drainEnd:
	default: // the listener failed
		end = time.Now().Add(drain)
	}
	if drain > 0 {
		select {
		case <-done:
		case <-time.After(time.Until(end)):
		}
		// What is left had its drain: closed with that reason.
		closeConns(rtmp.WithReason(rtmp.ReasonDrain, rtmp.ErrServerClosing))
	}
	closeConns(nil)
	<-done
	return err
}
