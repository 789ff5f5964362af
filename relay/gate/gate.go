// Package gate decides who may play and publish on a primary or relay: play
// keys and signed play tokens for protected applications, and the
// operator's on_publish/on_play hooks, with on_unpublish/on_stop told when
// it ends. It wraps the RTMP handler (Wrap) and the HLS/DASH handler (HTTP)
// and leaves both untouched when nothing is configured.
package gate

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaymesh/relaymesh/internal/hooks"
	"github.com/relaymesh/relaymesh/internal/playtoken"
)

// Query parameters a viewer proves itself with.
const (
	TokenParam = "token"
	KeyParam   = "key"
)

// UpstreamTokenTTL is the lifetime of the tokens a relay signs for its own
// upstream pulls (one per attempt).
const UpstreamTokenTTL = 2 * time.Minute

// Config of a gate. The zero value lets everything through.
type Config struct {
	// Protect lists the applications whose viewers need a key or a token
	// ("*": every application).
	Protect []string
	// Keys are play keys by "app/name", "app" or "*" (most specific first):
	// viewers add ?key=KEY.
	Keys map[string]string
	// Tokens verifies ?token= play tokens (nil or no secret: none accepted).
	Tokens *playtoken.Verifier
	// Hooks are the operator's callbacks (nil: none).
	Hooks *hooks.Client
	Log   *slog.Logger
}

// Gate applies a Config.
type Gate struct {
	cfg     Config
	protect map[string]bool
	all     bool
	cache   *allowCache
	// sessions follows HLS/DASH viewers for on_stop.
	sessions httpSessions
	refused  *prometheus.CounterVec
}

// Errors a refused viewer is told (none contains the credential).
var (
	ErrNoCredentials = errors.New("this stream needs a play token or key")
	ErrBadKey        = errors.New("wrong play key")
)

// New returns the gate of cfg.
func New(cfg Config) *Gate {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	g := &Gate{cfg: cfg, protect: map[string]bool{}, cache: newAllowCache(4096, 30*time.Second),
		refused: prometheus.NewCounterVec(refusalsOpts, []string{"proto", "reason"})}
	for _, a := range cfg.Protect {
		if a == "*" {
			g.all = true
		}
		g.protect[a] = true
	}
	return g
}

// Protected reports whether app's viewers need credentials.
func (g *Gate) Protected(app string) bool {
	return g != nil && (g.all || g.protect[app])
}

// Active reports whether the gate checks or calls anything at all.
func (g *Gate) Active() bool {
	return g != nil && (len(g.protect) > 0 || g.cfg.Hooks.Has(hooks.OnPlay) || g.cfg.Hooks.Has(hooks.OnPublish) ||
		g.cfg.Hooks.Has(hooks.OnStop) || g.cfg.Hooks.Has(hooks.OnUnpublish))
}

// CheckCredential checks one credential, a token or a key, for app/name.
// It returns nil when app is not protected.
func (g *Gate) CheckCredential(app, name, cred string) error {
	if !g.Protected(app) {
		return nil
	}
	if cred == "" {
		return ErrNoCredentials
	}
	var tokErr error
	if g.cfg.Tokens.Enabled() {
		if tokErr = g.cfg.Tokens.Verify(cred, app, name); tokErr == nil {
			return nil
		}
	}
	want, hasKey := g.key(app, name)
	if hasKey && subtle.ConstantTimeCompare([]byte(want), []byte(cred)) == 1 {
		return nil
	}
	switch {
	case tokErr != nil && !errors.Is(tokErr, playtoken.ErrMalformed):
		return tokErr // a real token, expired or for another stream
	case hasKey:
		return ErrBadKey
	case tokErr != nil:
		return tokErr
	}
	return ErrBadKey
}

// Check checks a query's token or key for app/name.
func (g *Gate) Check(app, name string, q url.Values) error {
	cred := q.Get(TokenParam)
	if cred == "" {
		cred = q.Get(KeyParam)
	}
	return g.CheckCredential(app, name, cred)
}

func (g *Gate) key(app, name string) (string, bool) {
	for _, k := range []string{app + "/" + name, app, "*"} {
		if v, ok := g.cfg.Keys[k]; ok {
			return v, true
		}
	}
	return "", false
}

// Credentials is the query a relay plays app/name with from its upstream:
// a fresh token of its own when it has a token secret, else the play key of
// the stream, else nothing. It is pull.Config.Credentials.
func (g *Gate) Credentials(app, name string) string {
	if g == nil {
		return ""
	}
	if g.cfg.Tokens.Enabled() {
		return TokenParam + "=" + g.cfg.Tokens.Sign(app, name, time.Now().Add(UpstreamTokenTTL))
	}
	if k, ok := g.key(app, name); ok {
		return KeyParam + "=" + url.QueryEscape(k)
	}
	return ""
}

// stripCredentials returns q without the token and key.
func stripCredentials(q url.Values) url.Values {
	if q.Get(TokenParam) == "" && q.Get(KeyParam) == "" {
		return q
	}
	out := url.Values{}
	for k, v := range q {
		if k != TokenParam && k != KeyParam {
			out[k] = v
		}
	}
	return out
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// gate runs the on_play or on_publish hook.
func (g *Gate) hook(ctx context.Context, b hooks.Body) error {
	if g == nil || !g.cfg.Hooks.Has(b.Action) {
		return nil
	}
	return g.cfg.Hooks.Gate(ctx, b)
}

func (g *Gate) notify(b hooks.Body) {
	if g != nil {
		g.cfg.Hooks.Notify(b)
	}
}
