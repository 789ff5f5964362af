package geo

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPollInterval is how often a Reloader looks at its file by default.
const DefaultPollInterval = 5 * time.Second

// ReloaderConfig configures a Reloader.
type ReloaderConfig struct {
	// Path is the database file. Required.
	Path string
	// PollInterval is how often Run compares the file's identity, size and
	// modification time with the loaded one. Default DefaultPollInterval.
	PollInterval time.Duration
	// MaxSize bounds the file size in bytes. Default DefaultMaxSize.
	MaxSize int64
	// SkipVerify skips the full integrity walk of each new file (see
	// OpenOptions.Verify). Default false: a file that is damaged anywhere
	// is refused and the old database stays.
	SkipVerify bool
}

// Reloader serves lookups from a database file and swaps in a new database
// when the file changes (Run polls it; Reload forces a reload, e.g. on
// SIGHUP). A new file that does not open or verify is logged and ignored:
// the old database keeps serving. Lookups never wait for a reload.
//
// To replace the file, write the new one beside it and rename it into place;
// a file rewritten in place may be read half-written (it is then refused,
// and picked up on the next poll after the write completes).
type Reloader struct {
	cfg ReloaderConfig
	log *slog.Logger
	cur atomic.Pointer[DB]

	mu   sync.Mutex  // serialises loads; readers never take it
	seen os.FileInfo // the file last loaded or refused
}

// NewReloader opens cfg.Path and returns a Reloader serving it. The first
// open must succeed. log may be nil (no logging).
func NewReloader(cfg ReloaderConfig, log *slog.Logger) (*Reloader, error) {
	if cfg.Path == "" {
		return nil, fmt.Errorf("geo: reloader: no database path")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{cfg: cfg, log: log.With("component", "geo", "db", cfg.Path)}
	if _, err := r.load(true); err != nil {
		return nil, err
	}
	return r, nil
}

// Lookup locates addr in the current database (see DB.Lookup).
func (r *Reloader) Lookup(addr netip.Addr) (Location, error) {
	return r.cur.Load().Lookup(addr)
}

// Current returns the database in use now.
func (r *Reloader) Current() *DB { return r.cur.Load() }

// Reload opens the file again, whether or not it looks changed, and swaps
// it in. On failure the old database stays and the error is returned.
func (r *Reloader) Reload() error {
	_, err := r.load(true)
	return err
}

// Run polls the file every PollInterval and reloads it when it changed,
// until ctx is done. It returns nil when ctx ends.
func (r *Reloader) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			_, _ = r.load(false) // logged inside
		}
	}
}

// load opens the file and swaps it in. Unless force is set it does nothing
// when the file is the one last seen. It reports whether it swapped.
func (r *Reloader) load(force bool) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := os.Stat(r.cfg.Path)
	if err != nil {
		if force || r.seen != nil {
			r.log.Error("geo database unavailable, keeping the loaded one", "err", err)
		}
		r.seen = nil
		return false, fmt.Errorf("geo: reload %s: %w", r.cfg.Path, err)
	}
	if !force && r.seen != nil && sameFile(r.seen, st) {
		return false, nil
	}
	r.seen = st
	db, err := Open(r.cfg.Path, OpenOptions{MaxSize: r.cfg.MaxSize, Verify: !r.cfg.SkipVerify})
	if err != nil {
		if r.cur.Load() != nil {
			r.log.Error("new geo database refused, keeping the loaded one", "err", err)
		}
		return false, err
	}
	r.cur.Store(db)
	m := db.Metadata()
	r.log.Info("geo database loaded", "type", m.Type, "built", m.BuildTime, "nodes", m.NodeCount)
	return true, nil
}

// sameFile reports whether two stats describe the same unchanged file.
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
