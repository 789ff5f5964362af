package pull

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relaymesh/relaymesh/internal/amf"
	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/hub"
	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// Config says where and how a relay pulls its streams.
type Config struct {
	// URL of the upstream server, rtmp://host:port (the primary or another
	// relay). The viewer's app and stream name are appended.
	URL string
	// RelayID identifies this relay to the upstream (sent with connect).
	RelayID string
	// Linger keeps a pull running after its last local subscriber left (default 30s).
	Linger time.Duration
	// StartTimeout bounds how long the first viewer waits for the upstream (default 10s).
	StartTimeout time.Duration
	// BackoffMin and BackoffMax bound the reconnect delay (defaults 250ms and 10s).
	BackoffMin, BackoffMax time.Duration
	// Conn is the RTMP connection configuration of upstream connections
	// (Conn.TLS for rtmps:// upstreams).
	Conn rtmp.ConnConfig
	// Credentials, when set, gives the query this relay plays app/name with
	// upstream (a play token or key of its own), asked at every attempt; it
	// replaces the query of the viewer that started the pull.
	Credentials func(app, name string) string
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Linger <= 0 {
		c.Linger = 30 * time.Second
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 10 * time.Second
	}
	if c.BackoffMin <= 0 {
		c.BackoffMin = 250 * time.Millisecond
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 10 * time.Second
	}
	return c
}

// Upstream runs one pull per stream: one upstream connection however many
// local viewers, started by the first and kept while viewers remain (plus
// Linger), reconnecting with backoff when the upstream drops.
type Upstream struct {
	cfg  Config
	hubs *hub.Registry
	log  *slog.Logger
	ctx  context.Context

	mu    sync.Mutex
	url   rtmp.URL
	pulls map[string]*pull

	reconnects atomic.Uint64 // attempts after a pull's first (UpstreamReconnects)
}

// New returns a puller that writes into hubs. ctx bounds every pull.
func New(ctx context.Context, cfg Config, hubs *hub.Registry, log *slog.Logger) (*Upstream, error) {
	cfg = cfg.WithDefaults()
	u := &Upstream{cfg: cfg, hubs: hubs, log: log.With("component", "upstream"), ctx: ctx, pulls: map[string]*pull{}}
	if err := u.SetURL(cfg.URL); err != nil {
		return nil, err
	}
	return u, nil
}

// SetURL changes the configured upstream for pulls started from now on.
func (u *Upstream) SetURL(raw string) error {
	url, err := parseUpstream(raw)
	if err != nil {
		return err
	}
	u.mu.Lock()
	u.url = url
	u.mu.Unlock()
	return nil
}

func parseUpstream(raw string) (rtmp.URL, error) {
	pu, err := rtmp.ParseURL(strings.TrimRight(raw, "/")+"/_", 1)
	if err != nil {
		return rtmp.URL{}, fmt.Errorf("upstream url: %w", err)
	}
	return rtmp.URL{Host: pu.Host, TLS: pu.TLS}, nil
}

type pull struct {
	u         *Upstream
	app, name string
	query     string
	hub       *hub.Hub
	log       *slog.Logger
	cancel    context.CancelFunc
	hold      bool
	// parent, when set, is where this stream is pulled from instead of the
	// configured upstream (the orchestrator's placement); after an attempt
	// there fails before playing, the pull falls back to the configured
	// upstream, whose chain leads to the primary whatever the placements.
	parent rtmp.URL
	from   string // the host of the current attempt
	// playing says the upstream plays the stream now; lastErr is why the
	// last attempt ended (guarded by u.mu, for /healthz and the API).
	playing bool
	lastErr error

	started  chan struct{} // closed once the first attempt succeeded or failed
	startErr error
	done     chan struct{}
	// unpublished: the upstream said the stream stopped (UnpublishNotify,
	// Play.Stop, StreamNotFound) and nothing was published since. Guarded by
	// u.mu.
	unpublished bool
	// ending: the pull was told to end (lingered out, released); a viewer
	// coming now waits for it to be gone and starts a new one. lastJoin is
	// when a viewer last asked for the stream (Ensure): it counts as
	// watching for Linger, as it subscribes only once Ensure returns.
	// Guarded by u.mu.
	ending   bool
	lastJoin time.Time
}

// Info describes a running pull for the API.
type Info struct {
	App      string `json:"app"`
	Name     string `json:"name"`
	Upstream string `json:"upstream"`
	Live     bool   `json:"live"`
	Held     bool   `json:"held"`
	// Playing says the upstream plays the stream now (connected, whether or
	// not its publisher sends); LastError is why the last attempt ended.
	Playing   bool   `json:"playing"`
	LastError string `json:"last_error,omitempty"`
}

// Pulls lists the running pulls.
func (u *Upstream) Pulls() []Info {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]Info, 0, len(u.pulls))
	for _, p := range u.pulls {
		pi := Info{App: p.app, Name: p.name, Upstream: p.from, Live: p.hub.Live(), Held: p.hold, Playing: p.playing}
		if p.lastErr != nil {
			pi.LastError = p.lastErr.Error()
		}
		out = append(out, pi)
	}
	return out
}

// UpstreamReconnects counts the attempts made after a pull's first one.
func (u *Upstream) UpstreamReconnects() uint64 { return u.reconnects.Load() }

// HeldHealth reports the streams held for the orchestrator (Hold) that the
// upstream does not play at the moment, after at least one failed attempt:
// the relay cannot serve what it was told to hold.
func (u *Upstream) HeldHealth() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	var errs []error
	for key, p := range u.pulls {
		if p.hold && !p.playing && p.lastErr != nil {
			errs = append(errs, fmt.Errorf("%s: upstream %s: %w", key, p.from, p.lastErr))
		}
	}
	return errors.Join(errs...)
}

// Ensure starts pulling app/name if it is not pulled yet and waits until the
// upstream has accepted the play (or refused it, or StartTimeout passed).
// query is passed upstream with connect and play (auth tokens). A pull
// whose upstream said the stream stopped, with no local subscriber waiting
// for it to come back, answers StreamNotFound.
func (u *Upstream) Ensure(ctx context.Context, app, name, query string) error {
	p, err := u.start(ctx, app, name, query, false, rtmp.URL{})
	if err != nil {
		return err
	}
	t := time.NewTimer(u.cfg.StartTimeout)
	defer t.Stop()
	select {
	case <-p.started:
		if p.startErr != nil {
			return p.startErr
		}
		u.mu.Lock()
		gone := p.unpublished
		u.mu.Unlock()
		if gone && !p.hub.Live() && p.hub.SubscriberCount() == 0 {
			return rtmp.Status{Level: "error", Code: rtmp.CodePlayStreamNotFound, Description: app + "/" + name + " is not published upstream"}
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("upstream %s did not answer within %s", u.url.Host, u.cfg.StartTimeout)
	}
}

// Hold pulls app/name and keeps it with or without viewers until Release:
// from parent (rtmp://host:port) when given, else from the configured
// upstream. A stream pulled already goes on from where it is pulled from.
func (u *Upstream) Hold(ctx context.Context, app, name, parent string) error {
	var from rtmp.URL
	if parent != "" {
		var err error
		if from, err = parseUpstream(parent); err != nil {
			return err
		}
	}
	p, err := u.start(ctx, app, name, "", true, from)
	if err != nil {
		return err
	}
	select {
	case <-p.started:
		return p.startErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PullDone returns a channel closed when the running pull of app/name ends
// (released, lingered out, refused), or nil when none runs.
func (u *Upstream) PullDone(app, name string) <-chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	if p := u.pulls[app+"/"+name]; p != nil {
		return p.done
	}
	return nil
}

// Release ends a pull (held or not) now.
func (u *Upstream) Release(app, name string) {
	u.mu.Lock()
	p := u.pulls[app+"/"+name]
	if p != nil {
		p.ending = true
	}
	u.mu.Unlock()
	if p != nil {
		p.cancel()
		<-p.done
	}
}

func (u *Upstream) start(ctx context.Context, app, name, query string, hold bool, parent rtmp.URL) (*pull, error) {
	key := app + "/" + name
	u.mu.Lock()
	defer u.mu.Unlock()
	for {
		p := u.pulls[key]
		if p == nil {
			break
		}
		if !p.ending {
			p.lastJoin = time.Now()
			if hold {
				p.hold = true
			}
			return p, nil
		}
		// Ending: its hub would be ended under the new viewer. Wait until
		// it is gone (its upstream connection closing), then start anew.
		u.mu.Unlock()
		select {
		case <-p.done:
		case <-ctx.Done():
			u.mu.Lock()
			return nil, ctx.Err()
		}
		u.mu.Lock()
	}
	pctx, cancel := context.WithCancel(u.ctx)
	p := &pull{
		u: u, app: app, name: name, query: query, hold: hold,
		hub:      u.hubs.Acquire(app, name),
		log:      u.log.With("stream", key),
		cancel:   cancel,
		lastJoin: time.Now(),
		started:  make(chan struct{}),
		done:     make(chan struct{}),
		parent:   parent,
	}
	url := u.url
	if parent.Host != "" {
		url = parent
	}
	p.from = url.Host
	u.pulls[key] = p
	go p.run(pctx, url)
	return p, nil
}

func (p *pull) run(ctx context.Context, url rtmp.URL) {
	defer close(p.done)
	defer func() {
		p.u.mu.Lock()
		delete(p.u.pulls, p.app+"/"+p.name)
		p.u.mu.Unlock()
		if p.hub.Live() {
			p.hub.End()
		}
		p.hub.Release()
		p.cancel()
	}()
	go p.lingerWatch(ctx)
	backoff := p.u.cfg.BackoffMin
	first := true
	for ctx.Err() == nil {
		playing, err := p.once(ctx, url, func() {
			if first {
				first = false
				close(p.started)
			}
		})
		if p.hub.Live() {
			p.hub.End()
		}
		p.u.mu.Lock()
		p.playing, p.lastErr = false, err
		p.u.mu.Unlock()
		if ctx.Err() != nil {
			if first {
				// Ended (released, shut down) before the upstream answered:
				// the viewers waiting in Ensure learn it now, not at their
				// StartTimeout.
				first = false
				p.startErr = fmt.Errorf("pull of %s/%s ended before upstream %s answered", p.app, p.name, url.Host)
				close(p.started)
			}
			return
		}
		if first {
			// The first attempt failed before the upstream accepted the play:
			// tell the waiting viewer why, and stop if the upstream refused.
			first = false
			p.startErr = err
			close(p.started)
			var st rtmp.Status
			if errors.As(err, &st) {
				p.log.Info("upstream refused", "code", st.Code, "reason", st.Description)
				return
			}
		}
		p.u.reconnects.Add(1)
		var st rtmp.Status
		notFound := errors.As(err, &st) && st.Code == rtmp.CodePlayStreamNotFound
		if notFound {
			p.setUnpublished(true)
			// The upstream is there, the stream is not (yet): a restarted
			// primary before its broadcaster is back. Ask again soon.
			backoff = min(backoff, time.Second)
		}
		p.log.Info("upstream lost, reconnecting", "err", err, "in", backoff)
		if playing {
			backoff = p.u.cfg.BackoffMin
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, p.u.cfg.BackoffMax)
		p.u.mu.Lock()
		if p.parent.Host == "" || url != p.parent || !playing {
			// No parent, or it did not play again: the configured upstream
			// (a lost connection to a parent that played is tried once more).
			url = p.u.url
		}
		p.from = url.Host
		p.u.mu.Unlock()
	}
}

// idle reports whether nobody uses the pull now: not held, answered (the
// viewer that started it subscribes after the answer: a slow answer is no
// idle pull) and no local subscriber; and when a viewer last joined.
func (p *pull) idle() (bool, time.Time) {
	p.u.mu.Lock()
	defer p.u.mu.Unlock()
	return p.idleLocked(), p.lastJoin
}

func (p *pull) idleLocked() bool {
	return !p.hold && p.hasStarted() && p.hub.SubscriberCount() == 0
}

// endIfIdle marks the pull ending if it is idle and nobody joined in the
// last Linger, at once with the check (under u.mu, as start reuses pulls):
// a viewer joining now either keeps it or finds it ending and starts a new
// one.
func (p *pull) endIfIdle(now time.Time) bool {
	p.u.mu.Lock()
	defer p.u.mu.Unlock()
	if !p.idleLocked() || now.Sub(p.lastJoin) < p.u.cfg.Linger {
		return false
	}
	p.ending = true
	return true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// hasStarted reports whether the first attempt has been answered (played
// or failed).
func (p *pull) hasStarted() bool {
	select {
	case <-p.started:
		return true
	default:
		return false
	}
}

func (p *pull) setUnpublished(v bool) {
	p.u.mu.Lock()
	p.unpublished = v
	p.u.mu.Unlock()
}

// lingerWatch ends the pull when no local subscriber has been there for Linger.
func (p *pull) lingerWatch(ctx context.Context) {
	tick := time.NewTicker(min(time.Second, p.u.cfg.Linger/4+time.Millisecond))
	defer tick.Stop()
	var idleSince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			idle, joined := p.idle()
			if !idle {
				idleSince = time.Time{}
				continue
			}
			if idleSince.IsZero() {
				idleSince = now
			}
			// A viewer that joined (Ensure) subscribes once it returns:
			// the idle time counts from its join.
			idleSince = later(idleSince, joined)
			if now.Sub(idleSince) >= p.u.cfg.Linger && p.endIfIdle(time.Now()) {
				p.log.Info("no viewers left, closing upstream", "linger", p.u.cfg.Linger)
				p.cancel()
				return
			}
		}
	}
}

// once plays the stream from upstream until the connection ends. It
// reports whether playback started.
func (p *pull) once(ctx context.Context, url rtmp.URL, onStart func()) (bool, error) {
	cfg := p.u.cfg.Conn
	cfg.ConnectProps = map[string]any{rtmp.RelayMarker: p.u.cfg.RelayID}
	url.App, url.Name, url.Query = p.app, p.name, p.query
	if p.u.cfg.Credentials != nil {
		url.Query = p.u.cfg.Credentials(p.app, p.name)
	}
	cc, err := rtmp.Dial(ctx, url, cfg, p.log)
	if err != nil {
		return false, err
	}
	defer cc.Close(nil)
	stop := context.AfterFunc(ctx, func() { cc.Close(context.Canceled) })
	defer stop()
	// An upstream that takes the connection and never answers the play
	// fails the attempt after StartTimeout (then it is tried again, with
	// backoff), rather than hold the pull for good.
	pctx, cancel := context.WithTimeoutCause(ctx, p.u.cfg.StartTimeout,
		fmt.Errorf("upstream %s did not answer the play within %s", url.Host, p.u.cfg.StartTimeout))
	_, err = cc.Play(pctx, p.name)
	cancel()
	if err != nil {
		if c := context.Cause(pctx); c != nil && ctx.Err() == nil {
			err = c
		}
		return false, err
	}
	cc.ReadInbound() // the stream comes in from here on, read here
	onStart()
	p.u.mu.Lock()
	p.playing, p.lastErr = true, nil
	p.u.mu.Unlock()
	p.log.Info("pulling from upstream", "upstream", url.Host)
	cc.SetReadTimeout(0)
	frames := &upstreamFrames{p: p, cc: cc, addr: url.Host}
	for {
		m, err := cc.ReadMessage()
		if err != nil {
			return true, err
		}
		switch m.Type {
		case rtmp.TypeCommandAMF0:
			cmd, err := rtmp.ParseCommand(m)
			if err != nil || cmd.Name != "onStatus" {
				continue
			}
			st := rtmp.StatusOf(cmd)
			switch st.Code {
			case rtmp.CodePlayUnpublishNotify, rtmp.CodePlayStop:
				p.setUnpublished(true)
				if p.hub.Live() {
					p.hub.End()
				}
				cc.SetReadTimeout(0)
			case rtmp.CodePlayStreamNotFound, rtmp.CodePlayFailed, rtmp.CodePlayInsufficientBW:
				return true, st
			}
		default:
			if _, err := rtmp.EachFrame(m, frames); err != nil {
				p.log.Debug("bad aggregate message from upstream: the rest dropped", "err", err)
			}
		}
	}
}

// upstreamFrames writes an upstream's frames into the pull's hub: the first
// one begins the hub's publish (and from then a silent upstream is a dead
// one); the data messages a server sends each player are not the stream's.
type upstreamFrames struct {
	p    *pull
	cc   *rtmp.ClientConn
	addr string
}

func (w *upstreamFrames) Write(kind av.Kind, ts uint32, payload []byte) {
	if kind == av.KindData && playOnlyData(payload) {
		return
	}
	if !w.p.hub.Live() {
		w.p.setUnpublished(false)
		w.p.hub.Begin(hub.PublisherInfo{Addr: w.addr, ID: "upstream"})
		w.cc.SetReadTimeout(20 * time.Second)
	}
	w.p.hub.Write(kind, ts, payload)
}

// playOnlyData reports data messages an upstream sends to each player, not
// part of the stream (|RtmpSampleAccess, NetStream.Data.Start).
func playOnlyData(p []byte) bool {
	switch av.DataName(p) {
	case "|RtmpSampleAccess":
		return true
	case "onStatus":
		vs, err := amf.Decode(p)
		if err == nil && len(vs) > 1 {
			if o, ok := amf.Object(vs[1]); ok {
				code, _ := o["code"].(string)
				return code == "NetStream.Data.Start"
			}
		}
	}
	return false
}
