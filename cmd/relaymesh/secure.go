package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/relaymesh/relaymesh/internal/adminauth"
	"github.com/relaymesh/relaymesh/internal/certreload"
	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/internal/hooks"
	"github.com/relaymesh/relaymesh/internal/playtoken"
	"github.com/relaymesh/relaymesh/relay/gate"
)

// bindSecure binds the primary's and relays' flags for play authorization,
// hooks, the admin API and TLS.
func bindSecure(c *cmdFlags) {
	cfg := c.cfg
	c.String(&cfg.RTMP.TLSListen, "rtmps", "rtmp.tls_listen", "RTMPS (RTMP over TLS) listen address, beside --rtmp (needs --tls-cert and --tls-key; default: none)")
	c.String(&cfg.HTTP.TLSListen, "https", "http.tls_listen", "HTTPS listen address serving what --http serves: HLS/DASH, status (needs --tls-cert and --tls-key; default: none)")
	bindTLS(c)
	h := &cfg.HTTP
	c.String(&h.AdminListen, "admin-http", "http.admin_listen", "listen address of the API that changes state (RPC calls, writes, drains); the public listeners then serve none of it (default: none)")
	c.String(&h.AdminToken, "admin-token", "http.admin_token", "bearer token of the API that changes state (default: none; loopback clients only unless --admin-http)")
	c.Bool(&h.PublicStatus, "public-status", "http.public_status", "serve read-only status (GET /api/..., /metrics) on the public listeners")
	p := &cfg.Play
	c.List(&p.Protect, "play-protect", "play.protect", "comma-separated applications whose viewers need a play key or token (* = all; default: none)")
	c.Map(&p.Keys, "play-key", "play.keys", "APP=KEY, APP/NAME=KEY or *=KEY", "APP=KEY or APP/NAME=KEY or *=KEY: viewers of a protected app use ?key=KEY")
	c.String(&p.TokenSecret, "play-token-secret", "play.token_secret", "secret of signed play tokens (?token=), the same as the redirector's --play-token-secret (default: none)")
	k := &cfg.Hooks
	c.String(&k.OnPublish, "hook-on-publish", "hooks.on_publish", "URL POSTed before a broadcaster starts; 2xx allows")
	c.String(&k.OnPlay, "hook-on-play", "hooks.on_play", "URL POSTed before a viewer starts (RTMP play, HLS/DASH entry playlist); 2xx allows")
	c.String(&k.OnUnpublish, "hook-on-unpublish", "hooks.on_unpublish", "URL POSTed when a broadcaster stopped (notice)")
	c.String(&k.OnStop, "hook-on-stop", "hooks.on_stop", "URL POSTed when a viewer stopped (notice; HLS/DASH: 30s without a request)")
	c.Duration(&k.Timeout, "hook-timeout", "hooks.timeout", "timeout of one hook call (0: 3s)")
	c.Bool(&k.FailOpen, "hook-fail-open", "hooks.fail_open", "allow when on_publish/on_play cannot answer in time (default: refuse)")
}

// bindTLS binds the certificate of the TLS listeners.
func bindTLS(c *cmdFlags) {
	c.String(&c.cfg.TLS.Cert, "tls-cert", "tls.cert", "PEM certificate chain of the TLS listeners, re-read when the file changes")
	c.String(&c.cfg.TLS.Key, "tls-key", "tls.key", "PEM private key of --tls-cert")
}

// checkSecure checks what config.Validate cannot: play keys go into
// HLS/DASH paths, so they must be path-safe.
func checkSecure(cfg config.Config) error {
	var errs []error
	for name, key := range cfg.Play.Keys {
		if !gate.PathSafe(key) {
			errs = append(errs, fmt.Errorf("play.keys.%s (--play-key): use up to 256 of A-Z a-z 0-9 . _ ~ - (the key goes into HLS/DASH paths)", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return configError(err)
	}
	return nil
}

// secure is what a node adds for TLS, the admin API, play authorization
// and hooks.
type secure struct {
	secureListeners
	policy adminauth.Policy
	hooks  *hooks.Client
	gate   *gate.Gate
}

// secureListeners are a node's TLS and admin listeners (nil: not
// configured).
type secureListeners struct {
	certs            *certreload.Reloader
	rtmpsLn, httpsLn net.Listener
	adminLn          net.Listener
}

func (l secureListeners) close() {
	for _, ln := range []net.Listener{l.rtmpsLn, l.httpsLn, l.adminLn} {
		if ln != nil {
			ln.Close()
		}
	}
}

// openSecureListeners opens the RTMPS, HTTPS and admin listeners cfg
// configures; on an error none stays open.
func openSecureListeners(cfg config.Config, log *slog.Logger) (l secureListeners, err error) {
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if cfg.RTMP.TLSListen != "" || cfg.HTTP.TLSListen != "" {
		if l.certs, err = certreload.New(cfg.TLS.Cert, cfg.TLS.Key, log); err != nil {
			return l, fmt.Errorf("tls.cert, tls.key (--tls-cert, --tls-key): %w", err)
		}
	}
	if cfg.RTMP.TLSListen != "" {
		ln, err := net.Listen("tcp", cfg.RTMP.TLSListen)
		if err != nil {
			return l, fmt.Errorf("rtmps listen (rtmp.tls_listen, --rtmps): %w", err)
		}
		l.rtmpsLn = tls.NewListener(ln, l.certs.ServerConfig(false))
	}
	if cfg.HTTP.TLSListen != "" {
		ln, err := net.Listen("tcp", cfg.HTTP.TLSListen)
		if err != nil {
			return l, fmt.Errorf("https listen (http.tls_listen, --https): %w", err)
		}
		l.httpsLn = tls.NewListener(ln, l.certs.ServerConfig(true))
	}
	if cfg.HTTP.AdminListen != "" {
		if l.adminLn, err = net.Listen("tcp", cfg.HTTP.AdminListen); err != nil {
			return l, fmt.Errorf("admin http listen (http.admin_listen, --admin-http): %w", err)
		}
	}
	return l, nil
}

// setSecureListeners gives the node its TLS and admin listeners; with an
// admin listener the public ones serve none of the admin API.
func (n *node) setSecureListeners(l secureListeners) {
	n.sec.secureListeners = l
	n.sec.policy.Separate = l.adminLn != nil
}

// initSecure builds the admin policy, hooks and gate of n.cfg (called by
// newNodeOn; the listeners come with setSecureListeners).
func (n *node) initSecure() {
	cfg := n.cfg
	s := &n.sec
	s.policy = adminauth.Policy{Token: cfg.HTTP.AdminToken, PrivateStatus: !cfg.HTTP.PublicStatus}
	server := cfg.Relay.ID
	if server == "" {
		server = cfg.Primary.ID
	}
	if server == "" {
		server = "primary"
	}
	h := cfg.Hooks
	hc := hooks.Config{OnPublish: h.OnPublish, OnPlay: h.OnPlay, OnUnpublish: h.OnUnpublish, OnStop: h.OnStop,
		Timeout: h.Timeout, FailOpen: h.FailOpen, Queue: h.Queue, Server: server, Log: n.log.With("component", "hooks")}
	if hc.Enabled() {
		s.hooks = hooks.New(hc)
		if err := s.hooks.Register(n.http.Registry); err != nil {
			panic("relaymesh: hook metrics: " + err.Error()) // a fresh registry: names collide only by a bug
		}
	}
	var tokens *playtoken.Verifier
	if cfg.Play.TokenSecret != "" {
		tokens = &playtoken.Verifier{Secrets: [][]byte{[]byte(cfg.Play.TokenSecret)}}
		for _, p := range cfg.Play.PreviousTokenSecrets {
			tokens.Secrets = append(tokens.Secrets, []byte(p))
		}
	}
	if len(cfg.Play.Protect) > 0 && cfg.Play.TokenSecret == "" && len(cfg.Play.Keys) == 0 {
		n.log.Warn("play.protect is set but there is no play token secret or key: every viewer of those apps will be refused")
	}
	s.gate = gate.New(gate.Config{Protect: cfg.Play.Protect, Keys: cfg.Play.Keys, Tokens: tokens, Hooks: s.hooks,
		Log: n.log.With("component", "gate")})
	if err := s.gate.Register(n.http.Registry); err != nil {
		panic("relaymesh: gate metrics: " + err.Error()) // a fresh registry: names collide only by a bug
	}
}

// upstreamCredentials is a relay's pull.Config.Credentials: nil
// (the viewer's query goes upstream, as without play authorization) unless
// the relay has a play token secret or play keys.
func (n *node) upstreamCredentials() func(app, name string) string {
	if n.cfg.Play.TokenSecret == "" && len(n.cfg.Play.Keys) == 0 {
		return nil
	}
	return n.sec.gate.Credentials
}

// upstreamTLS is the TLS client configuration of rtmps:// upstreams.
func upstreamTLS(cfg config.Config) (*tls.Config, error) {
	c, err := certreload.ClientConfig(cfg.Relay.UpstreamCA)
	if err != nil {
		return nil, fmt.Errorf("relay.upstream_ca (--upstream-ca): %w", err)
	}
	return c, nil
}

// serveSecure starts the extra listeners; each ends with ctx.
func (n *node) serveSecure(ctx, httpCtx context.Context, spawn func(func() error)) {
	s := &n.sec
	if s.hooks != nil {
		go s.hooks.Run(httpCtx)
	}
	go s.gate.Run(httpCtx) // HLS/DASH sessions; returns at once when not needed
	if s.rtmpsLn != nil {
		spawn(func() error { return n.server.Serve(ctx, s.rtmpsLn, n.cfg.RTMP.Drain) })
	}
	if s.httpsLn != nil {
		spawn(func() error { return n.http.ServeHandler(httpCtx, s.httpsLn, s.policy.Public(n.http.Mux)) })
	}
	if s.adminLn != nil {
		spawn(func() error { return n.http.ServeHandler(httpCtx, s.adminLn, s.policy.Admin(n.http.Mux)) })
	}
}

// secureAddrs are the extra listeners' addresses for the startup log line.
func (n *node) secureAddrs() []any {
	var out []any
	for _, l := range []struct {
		k  string
		ln net.Listener
	}{{"rtmps", n.sec.rtmpsLn}, {"https", n.sec.httpsLn}, {"admin_http", n.sec.adminLn}} {
		if l.ln != nil {
			out = append(out, l.k, l.ln.Addr().String())
		}
	}
	return out
}
