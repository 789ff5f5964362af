// Package httpserver is the HTTP listener every relaymesh process runs:
// /healthz (with the process's health checks), Prometheus /metrics (with
// relaymesh_build_info and the request durations of every route), and
// whatever handlers the process mounts (stream API, HLS/DASH, dashboard),
// with sane timeouts and graceful shutdown.
package httpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is a mux with the standard endpoints already mounted.
type Server struct {
	Mux      *http.ServeMux
	Registry *prometheus.Registry
	draining atomic.Bool
	log      *slog.Logger
	duration *prometheus.HistogramVec

	mu     sync.Mutex
	checks []check
}

type check struct {
	name string
	f    func() error
}

// New returns a server with /healthz and /metrics, and the Go, process and
// build-info collectors registered.
func New(log *slog.Logger) *Server {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo())
	s := &Server{Mux: http.NewServeMux(), Registry: reg, log: log, duration: newDurations()}
	reg.MustRegister(s.duration)
	s.Mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s.Mux.HandleFunc("GET /healthz", s.healthz)
	return s
}

// AddCheck adds a health check: while f returns an error, /healthz answers
// 503 with the check's name and the error as the reason.
func (s *Server) AddCheck(name string, f func() error) {
	s.mu.Lock()
	s.checks = append(s.checks, check{name, f})
	s.mu.Unlock()
}

// Health is the body of /healthz.
type Health struct {
	Status  string   `json:"status"`            // ok, draining or unhealthy
	Reasons []Reason `json:"reasons,omitempty"` // why not ok
}

// Reason is a failing check.
type Reason struct {
	Check string `json:"check"`
	Error string `json:"error"`
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	h := Health{Status: "ok"}
	if s.draining.Load() {
		h.Status = "draining"
		h.Reasons = append(h.Reasons, Reason{Check: "drain", Error: "shutting down: no new viewers"})
	}
	s.mu.Lock()
	checks := slices.Clone(s.checks)
	s.mu.Unlock()
	for _, c := range checks {
		if err := c.f(); err != nil {
			if h.Status == "ok" {
				h.Status = "unhealthy"
			}
			h.Reasons = append(h.Reasons, Reason{Check: c.name, Error: err.Error()})
		}
	}
	code := http.StatusOK
	if h.Status != "ok" {
		code = http.StatusServiceUnavailable
	}
	WriteJSON(w, code, h)
}

// Handler is the mux with every request's duration measured.
func (s *Server) Handler() http.Handler { return instrument(s.Mux, s.duration) }

// EnablePprof mounts net/http/pprof under /debug/pprof/ (for operators
// profiling a live server; off by default).
func (s *Server) EnablePprof() {
	s.Mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	s.Mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	s.Mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	s.Mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	s.Mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}

// SetDraining makes /healthz answer 503 so load balancers stop sending viewers.
func (s *Server) SetDraining(v bool) { s.draining.Store(v) }

// Serve serves on ln until ctx ends, then shuts down gracefully (5 s).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.ServeHandler(ctx, ln, s.Mux)
}

// ServeHandler is Serve with h (e.g. the mux behind a middleware) in
// front. A listener returning TLS connections gets HTTP/2 when its
// tls.Config offers "h2".
func (s *Server) ServeHandler(ctx context.Context, ln net.Listener, h http.Handler) error {
	hs := &http.Server{
		Handler:           instrument(h, s.duration),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = hs.Close()
	}
	return err
}

// WriteJSON writes v as indented JSON with the right content type.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
