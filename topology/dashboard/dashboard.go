// Package dashboard serves the mesh dashboard at / of the orchestrator's
// HTTP: the location graph with the relays on it, their load, the live
// streams, each location's demand bonus against its threshold, the
// leader's recent decisions with their reasons, and a player (hls.js,
// embedded) for any stream. The page is plain HTML, CSS and JavaScript
// built into the binary; it updates live from GET /api/v1/events, a
// server-sent event stream of the same data as GET /api/v1/mesh plus the
// decisions. GET /api/v1/graph gives the locations with their coordinates.
package dashboard

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/orchestrator"
	"github.com/relaymesh/relaymesh/topology/redirector"
)

//go:embed static
var staticFS embed.FS

// Config tunes a dashboard. Zero fields take the documented defaults.
type Config struct {
	// Graph is the location graph with its servers (required).
	Graph *graph.Graph
	// Mesh returns the mesh as the redirector sees it (required).
	Mesh func() redirector.MeshView
	// Decisions returns the leader's recent decisions, newest first (optional).
	Decisions func() []orchestrator.Decision
	// Leader reports whether this instance leads (optional).
	Leader func() bool
	// Interval between snapshots for the event stream. Default 1 s.
	Interval time.Duration
	// Heartbeat: an idle event stream gets a comment this often, so
	// proxies keep it open and dead clients are noticed. Default 15 s.
	Heartbeat time.Duration
	// MaxClients bounds the open event streams; more get 503. Default 64.
	MaxClients int
	// WriteTimeout bounds one write to an event stream. Default 10 s.
	WriteTimeout time.Duration
}

// Snapshot is one event of the stream: the mesh view (the same fields as
// /api/v1/mesh) plus the decisions and whether this instance leads.
type Snapshot struct {
	redirector.MeshView
	Decisions []orchestrator.Decision `json:"decisions"`
	Leader    bool                    `json:"leader"`
}

// snapshot is an encoded Snapshot; changed is closed when a newer one
// replaces it, which wakes every event stream at once.
type snapshot struct {
	data    []byte
	changed chan struct{}
}

// Dashboard serves the page, its assets and the event stream.
type Dashboard struct {
	cfg     Config
	log     *slog.Logger
	graph   []byte // encoded graph view
	cur     atomic.Pointer[snapshot]
	clients atomic.Int64
	done    chan struct{}
	started atomic.Bool
}

// New returns a dashboard; Run keeps its event stream fresh.
func New(cfg Config, log *slog.Logger) (*Dashboard, error) {
	if cfg.Graph == nil || cfg.Mesh == nil {
		return nil, errors.New("dashboard: graph and mesh are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = 64
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	gv, err := json.Marshal(newGraphView(cfg.Graph))
	if err != nil {
		return nil, err
	}
	d := &Dashboard{cfg: cfg, log: log.With("component", "dashboard"), graph: gv, done: make(chan struct{})}
	d.refresh()
	return d, nil
}

// Run refreshes the snapshot every interval until ctx ends; then it ends
// every open event stream.
func (d *Dashboard) Run(ctx context.Context) error {
	if !d.started.CompareAndSwap(false, true) {
		return errors.New("dashboard: Run called twice")
	}
	defer close(d.done)
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			d.refresh()
		}
	}
}

// refresh encodes a new snapshot and publishes it when it differs.
func (d *Dashboard) refresh() {
	s := Snapshot{MeshView: d.cfg.Mesh(), Decisions: []orchestrator.Decision{}}
	if d.cfg.Decisions != nil {
		s.Decisions = append(s.Decisions, d.cfg.Decisions()...)
	}
	if d.cfg.Leader != nil {
		s.Leader = d.cfg.Leader()
	}
	data, err := json.Marshal(s)
	if err != nil {
		d.log.Warn("snapshot not encoded", "err", err)
		return
	}
	old := d.cur.Load()
	if old != nil && bytes.Equal(old.data, data) {
		return
	}
	d.cur.Store(&snapshot{data: data, changed: make(chan struct{})})
	if old != nil {
		close(old.changed)
	}
}

// Handler serves the dashboard's routes alone.
func (d *Dashboard) Handler() http.Handler {
	mux := http.NewServeMux()
	d.Mount(mux)
	return mux
}

// Mount adds the dashboard's routes to mux: GET / (the page),
// GET /dashboard/… (its assets), GET /api/v1/events and GET /api/v1/graph.
func (d *Dashboard) Mount(mux *http.ServeMux) {
	sub, _ := fs.Sub(staticFS, "static")
	assets := http.FileServerFS(sub)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, sub, "index.html")
	})
	mux.Handle("GET /dashboard/", http.StripPrefix("/dashboard", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" || r.URL.Path == "/index.html" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		assets.ServeHTTP(w, r)
	})))
	mux.HandleFunc("GET /api/v1/graph", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(d.graph)
	})
	mux.HandleFunc("GET /api/v1/events", d.events)
}
