package hub

import (
	"log/slog"
	"sort"
	"sync"
)

// Registry holds all hubs of a process, keyed by app + "/" + name.
type Registry struct {
	cfg Config
	log *slog.Logger
	now func() int64 // wall clock in ms for frames' arrival times (tests replace it)

	mu            sync.Mutex
	hubs          map[string]*Hub
	retired       subTotals // counters of hubs that have left
	inGone        uint64    // frames written into hubs that have left
	streamMetrics           // per-stream label bound (metrics.go)
}

// NewRegistry returns an empty registry; cfg gets its defaults, a nil log
// discards.
func NewRegistry(cfg Config, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Registry{cfg: cfg.WithDefaults(), log: log, now: wallClock(), hubs: map[string]*Hub{}}
}

// Config returns the registry's configuration with defaults applied.
func (r *Registry) Config() Config { return r.cfg }

func key(app, name string) string { return app + "/" + name }

// Acquire returns the hub of app/name, creating it if needed, and counts a
// reference that the caller gives back with Hub.Release.
func (r *Registry) Acquire(app, name string) *Hub {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := key(app, name)
	h := r.hubs[k]
	if h == nil {
		h = newHub(r, app, name)
		r.hubs[k] = h
		r.labelLocked(h)
	}
	h.refs++
	return h
}

// Lookup returns the hub of app/name or nil; it takes no reference.
func (r *Registry) Lookup(app, name string) *Hub {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hubs[key(app, name)]
}

// List returns every hub, sorted by app, then name.
func (r *Registry) List() []*Hub {
	r.mu.Lock()
	out := make([]*Hub, 0, len(r.hubs))
	for _, h := range r.hubs {
		out = append(out, h)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].app != out[j].app {
			return out[i].app < out[j].app
		}
		return out[i].name < out[j].name
	})
	return out
}

func (r *Registry) release(h *Hub) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h.refs > 0 {
		h.refs--
	}
	r.removeIfIdleLocked(h)
}

// maybeRemove removes h if nothing uses it any more.
func (r *Registry) maybeRemove(h *Hub) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeIfIdleLocked(h)
}

// removeIfIdleLocked: r.mu is held; takes h.mu.
func (r *Registry) removeIfIdleLocked(h *Hub) {
	if h.refs > 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.removed || h.live || len(*h.subs.Load()) > 0 {
		return
	}
	h.removed = true
	if r.hubs[key(h.app, h.name)] == h {
		delete(r.hubs, key(h.app, h.name))
	}
	t := h.totalsLocked()
	r.retired.sent += t.sent
	r.retired.dropped.add(t.dropped)
	r.retired.tooSlow += t.tooSlow
	r.retired.overflw += t.overflw
	r.inGone += h.framesIn
	r.unlabelLocked(h, t)
}
