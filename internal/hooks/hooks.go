// Package hooks calls the operator's HTTP callbacks on stream events, in the
// style of SRS's http_hooks and nginx-rtmp's on_* directives: on_publish
// and on_play are asked before a broadcaster or viewer starts and their
// answer decides (2xx allows, anything else refuses); on_unpublish and
// on_stop are told afterwards, from a bounded queue that never blocks the
// caller.
package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Event names, also the "action" of the body.
const (
	OnPublish   = "on_publish"
	OnPlay      = "on_play"
	OnUnpublish = "on_unpublish"
	OnStop      = "on_stop"
)

// Body is the JSON document POSTed to every hook.
type Body struct {
	Action   string `json:"action"`             // on_publish, on_play, on_unpublish, on_stop
	Server   string `json:"server_id"`          // the id of the server calling (primary or relay id)
	ClientID string `json:"client_id"`          // connection id (RTMP) or "" (HTTP)
	IP       string `json:"ip"`                 // the client's address
	Proto    string `json:"proto"`              // rtmp, hls or dash
	App      string `json:"app"`                // application
	Stream   string `json:"stream"`             // stream name without the query
	Param    string `json:"param"`              // the client's query string, credentials included
	TCURL    string `json:"tc_url,omitempty"`   // RTMP: the tcUrl of connect
	Relay    string `json:"relay,omitempty"`    // RTMP: the id a downstream relay announced
	Time     string `json:"time"`               // RFC 3339, when the event happened
	Duration string `json:"duration,omitempty"` // on_unpublish, on_stop: how long it lasted (Go duration)
}

// Config says where the hooks are and how they are called.
type Config struct {
	// URLs of the hooks; an empty one is not called (and allows).
	OnPublish, OnPlay, OnUnpublish, OnStop string
	// Timeout bounds one call (default 3s).
	Timeout time.Duration
	// FailOpen allows a publish or play when its hook cannot be reached or
	// does not answer in time; by default (false) it is refused.
	FailOpen bool
	// Queue bounds the notifications waiting to be sent (default 1024);
	// beyond it they are dropped and counted.
	Queue int
	// Server is put in every body's server_id.
	Server string
	// HTTP is the client (default: one with Timeout that follows no redirect).
	HTTP *http.Client
	Log  *slog.Logger
}

// Enabled reports whether any hook is configured.
func (c Config) Enabled() bool {
	return c.OnPublish != "" || c.OnPlay != "" || c.OnUnpublish != "" || c.OnStop != ""
}

// Client calls the hooks. Its zero value and a nil *Client call nothing.
type Client struct {
	cfg   Config
	queue chan Body
	calls *prometheus.CounterVec
	drops prometheus.Counter
	once  sync.Once
}

// Denied is the error of a hook that refused.
type Denied struct {
	Event  string
	Status int
}

func (d *Denied) Error() string {
	return "refused by the " + d.Event + " hook (HTTP " + strconv.Itoa(d.Status) + ")"
}

// ErrUnavailable wraps a failed call of a fail-closed gate.
var ErrUnavailable = errors.New("hook unavailable")

// New returns a client; call Run to send notifications.
func New(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 1024
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: cfg.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Client{
		cfg:   cfg,
		queue: make(chan Body, cfg.Queue),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "relaymesh_hook_calls_total",
			Help: "HTTP hook calls by event and result (allow, deny, error)."}, []string{"event", "result"}),
		drops: prometheus.NewCounter(prometheus.CounterOpts{Name: "relaymesh_hook_notifications_dropped_total",
			Help: "on_unpublish/on_stop notifications dropped because the queue was full."}),
	}
}

// Register adds the client's metrics to reg.
func (c *Client) Register(reg prometheus.Registerer) error {
	if c == nil {
		return nil
	}
	for _, m := range []prometheus.Collector{c.calls, c.drops} {
		if err := reg.Register(m); err != nil {
			return err
		}
	}
	return nil
}

func (c *Client) url(event string) string {
	if c == nil {
		return ""
	}
	switch event {
	case OnPublish:
		return c.cfg.OnPublish
	case OnPlay:
		return c.cfg.OnPlay
	case OnUnpublish:
		return c.cfg.OnUnpublish
	case OnStop:
		return c.cfg.OnStop
	}
	return ""
}

// Has reports whether the hook of event is configured.
func (c *Client) Has(event string) bool { return c.url(event) != "" }

// Gate asks the hook of b.Action and returns nil when it allows (or is not
// configured), a *Denied when it answers other than 2xx, and, when it
// cannot be reached in time, nil (fail-open) or an error wrapping
// ErrUnavailable (fail-closed).
func (c *Client) Gate(ctx context.Context, b Body) error {
	u := c.url(b.Action)
	if u == "" {
		return nil
	}
	status, err := c.post(ctx, u, b)
	switch {
	case err != nil:
		c.calls.WithLabelValues(b.Action, "error").Inc()
		c.cfg.Log.Warn("hook call failed", "event", b.Action, "err", err, "fail_open", c.cfg.FailOpen)
		if c.cfg.FailOpen {
			return nil
		}
		return fmt.Errorf("%w: %s did not answer", ErrUnavailable, b.Action)
	case status/100 == 2:
		c.calls.WithLabelValues(b.Action, "allow").Inc()
		return nil
	default:
		c.calls.WithLabelValues(b.Action, "deny").Inc()
		return &Denied{Event: b.Action, Status: status}
	}
}

// Notify queues b for its hook without waiting; a full queue drops it.
func (c *Client) Notify(b Body) {
	if c.url(b.Action) == "" {
		return
	}
	select {
	case c.queue <- b:
	default:
		c.drops.Inc()
	}
}

// Run sends queued notifications until ctx ends.
func (c *Client) Run(ctx context.Context) {
	if c == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-c.queue:
			status, err := c.post(ctx, c.url(b.Action), b)
			switch {
			case err != nil:
				c.calls.WithLabelValues(b.Action, "error").Inc()
				c.cfg.Log.Info("hook notification failed", "event", b.Action, "err", err)
			case status/100 == 2:
				c.calls.WithLabelValues(b.Action, "allow").Inc()
			default:
				c.calls.WithLabelValues(b.Action, "deny").Inc()
			}
		}
	}
}

// post sends b and returns the status. Errors name neither the URL nor
// the body (they may carry credentials).
func (c *Client) post(ctx context.Context, u string, b Body) (int, error) {
	if b.Time == "" {
		b.Time = time.Now().UTC().Format(time.RFC3339Nano)
	}
	if b.Server == "" {
		b.Server = c.cfg.Server
	}
	data, err := json.Marshal(b)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(data))
	if err != nil {
		return 0, errors.New("bad hook URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "relaymesh-hooks")
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("no answer within %s", c.cfg.Timeout)
		}
		return 0, errors.New("hook unreachable")
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}
