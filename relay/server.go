package relay

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
	// Rounds tunes the rounds in which connections are written when
	// Conn.WriteBatch is set.
	Rounds rtmp.FlusherConfig

	mu     sync.Mutex
	active int
	wg     sync.WaitGroup
}

// Active is the number of open connections.
func (s *Server) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// Serve accepts on ln until ctx ends. It then stops accepting and gives open
// connections up to drain to finish before closing them.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	connCtx, closeConns := context.WithCancel(context.WithoutCancel(ctx))
	defer closeConns()
	cc := s.Conn
	if cc.WriteBatch > 0 && cc.Flusher == nil {
		// Write every connection in rounds of WriteBatch from a few
		// workers rather than from a goroutine per viewer.
		cc.Flusher = rtmp.NewAdaptiveFlusher(connCtx, cc.WriteBatch, s.Rounds)
	}
	go func() {
		<-ctx.Done()
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
			nc.Close()
			continue
		}
		s.active++
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				s.active--
				s.mu.Unlock()
			}()
			rtmp.Serve(connCtx, nc, cc, s.Handler, s.Log)
		}()
	}
	// Drain: let connections end on their own for a while, then close them.
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	if drain > 0 {
		s.Log.Info("draining RTMP connections", "open", s.Active(), "for", drain)
		select {
		case <-done:
		case <-time.After(drain):
		}
	}
	closeConns()
	<-done
	return err
}
