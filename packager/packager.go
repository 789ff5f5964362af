package packager

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// Packager packages the streams of a Source as HLS and DASH on demand.
type Packager struct {
	cfg Config
	src Source
	m   *metrics
	now func() time.Time

	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	streams map[string]*stream
	resume  map[string]*resumePoint       // where stopped streams left off
	held    map[string]context.CancelFunc // streams held packaged (hold.go)
	closed  bool
	wg      sync.WaitGroup

	// lookedUp, set by tests, runs as a request has looked its stream up.
	lookedUp func(*stream)
}

// New returns a Packager reading streams from src. Close stops it.
func New(src Source, cfg Config) (*Packager, error) {
	if src == nil {
		return nil, errors.New("packager: nil source")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Packager{cfg: cfg, src: src, m: m, now: time.Now, ctx: ctx, cancel: cancel, streams: make(map[string]*stream), resume: make(map[string]*resumePoint), held: make(map[string]context.CancelFunc)}, nil
}

// Close stops packaging every stream and waits for the pumps to end.
func (p *Packager) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}

// Handler serves /hls/{app}/{name}/… and /dash/{app}/{name}/… (and
// /dash/time, the clock DASH players synchronise with). Mount it at the root
// of the process's mux, or under those prefixes.
func (p *Packager) Handler() http.Handler { return http.HandlerFunc(p.serveHTTP) }

// errClosed is returned for requests after Close.
var errClosed = errors.New("packager: closed")

// stream returns the running packager of app/name, starting it when needed,
// and waits (bounded by ctx) until it is subscribed.
func (p *Packager) stream(ctx context.Context, app, name string) (*stream, error) {
	key := app + "/" + name
	var st *stream
	for st == nil {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errClosed
		}
		cur, ok := p.streams[key]
		if ok && cur.ctx.Err() != nil {
			// Stopping (its linger, or a failed start) but not gone yet:
			// wait until it is, so that the next run takes up where it
			// left off (its resume point is kept as it goes).
			p.mu.Unlock()
			select {
			case <-cur.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		if !ok {
			cur = p.newStream(app, name)
			p.streams[key] = cur
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				cur.start()
			}()
		}
		// Touched under p.mu, where the linger decides (lingerCheck): the
		// linger either sees this request or stopped the stream before it
		// was looked up, never one in between.
		cur.touch()
		p.mu.Unlock()
		st = cur
	}
	if p.lookedUp != nil {
		p.lookedUp(st)
	}
	select {
	case <-st.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if st.startErr != nil {
		return nil, st.startErr
	}
	return st, nil
}

// Start begins packaging app/name now, before any HTTP request (for apps
// configured AlwaysOn, call it when a stream is published so the first
// viewer finds segments ready). Other apps' streams stop after Linger
// without requests as usual.
func (p *Packager) Start(ctx context.Context, app, name string) error {
	if !validName(app) || !validName(name) {
		return ErrNotFound
	}
	_, err := p.stream(ctx, app, name)
	return err
}

// End ends the packaging of app/name visibly, as when its source ends: the
// media playlists get EXT-X-ENDLIST and the DASH manifest becomes static,
// for EndedLinger; then its URLs answer 404 (or start afresh if the source
// has the stream again). The process calls it when it stops carrying a
// stream (a relay drained or closed for it), so that players go back to
// the redirector instead of watching a frozen picture.
func (p *Packager) End(app, name string) {
	p.Release(app, name)
	p.mu.Lock()
	st := p.streams[app+"/"+name]
	p.mu.Unlock()
	if st != nil {
		st.pumpCancel()
	}
}

// EndAll ends every stream being packaged, as End does (a node that
// drains), and releases every Hold.
func (p *Packager) EndAll() {
	p.mu.Lock()
	for key, cancel := range p.held {
		cancel()
		delete(p.held, key)
	}
	sts := make([]*stream, 0, len(p.streams))
	for _, st := range p.streams {
		sts = append(sts, st)
	}
	p.mu.Unlock()
	for _, st := range sts {
		st.pumpCancel()
	}
}

// Resume points are kept this long, for at most this many streams.
const (
	resumeFor = time.Hour
	maxResume = 4096
)

// forget removes a stopped stream so that the next request starts afresh,
// and keeps where it left off (rp, may be nil) so that the next run goes on
// with its timeline.
func (p *Packager) forget(st *stream, rp *resumePoint) {
	key := st.app + "/" + st.name
	p.mu.Lock()
	current := p.streams[key] == st
	if current {
		delete(p.streams, key)
	}
	if rp != nil {
		if len(p.resume) >= maxResume {
			for k, r := range p.resume {
				if rp.at.Sub(r.at) > resumeFor || len(p.resume) >= maxResume {
					delete(p.resume, k)
				}
			}
		}
		p.resume[key] = rp
	}
	if current {
		// Under p.mu: the next run of the stream (a request right after)
		// keeps its series. A run forgotten already (its linger, then its
		// pump's return) leaves it alone.
		p.m.viewers.DeleteLabelValues(st.app, st.name)
	}
	p.mu.Unlock()
}

// takeResume returns (and forgets) where the last run of key stopped, if
// recently; p.mu is held by the caller (newStream runs under it).
func (p *Packager) takeResume(key string) *resumePoint {
	rp := p.resume[key]
	delete(p.resume, key)
	if rp == nil || p.now().Sub(rp.at) > resumeFor {
		return nil
	}
	return rp
}

// Streams returns the app/name keys of the streams being packaged.
func (p *Packager) Streams() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.streams))
	for k := range p.streams {
		out = append(out, k)
	}
	return out
}
