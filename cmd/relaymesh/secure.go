package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/relaymesh/relaymesh/internal/adminauth"
	"github.com/relaymesh/relaymesh/internal/certreload"
	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/internal/hooks"
	"github.com/relaymesh/relaymesh/internal/playtoken"
	"github.com/relaymesh/relaymesh/relay/gate"
)

// secureFlags are the primary's and relays' flags for play authorization,
// hooks, the admin API and TLS; each overrides its config file key.
type secureFlags struct {
	rtmps, https, cert, key                string
	adminHTTP, adminToken                  string
	publicStatus                           bool
	playProtect, playTokenSecret           string
	playKeys                               multiFlag
	onPublish, onPlay, onUnpublish, onStop string
	hookTimeout                            time.Duration
	hookFailOpen                           bool
}

func (f *secureFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.rtmps, "rtmps", "", "RTMPS (RTMP over TLS) listen address, beside --rtmp (needs --tls-cert and --tls-key)")
	fs.StringVar(&f.https, "https", "", "HTTPS listen address serving what --http serves: HLS/DASH, status (needs --tls-cert and --tls-key)")
	fs.StringVar(&f.cert, "tls-cert", "", "PEM certificate chain of --rtmps and --https, re-read when the file changes")
	fs.StringVar(&f.key, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&f.adminHTTP, "admin-http", "", "listen address of the API that changes state (RPC calls, writes, drains); the public listeners then serve none of it")
	fs.StringVar(&f.adminToken, "admin-token", "", "bearer token of the API that changes state (default: none; loopback clients only unless --admin-http)")
	fs.BoolVar(&f.publicStatus, "public-status", true, "serve read-only status (GET /api/..., /metrics) on the public listeners")
	fs.StringVar(&f.playProtect, "play-protect", "", "comma-separated applications whose viewers need a play key or token (* = all)")
	fs.Var(&f.playKeys, "play-key", "APP=KEY or APP/NAME=KEY or *=KEY: viewers of a protected app use ?key=KEY; repeatable")
	fs.StringVar(&f.playTokenSecret, "play-token-secret", "", "secret of signed play tokens (?token=), the same as the redirector's --play-token-secret")
	fs.StringVar(&f.onPublish, "hook-on-publish", "", "URL POSTed before a broadcaster starts; 2xx allows")
	fs.StringVar(&f.onPlay, "hook-on-play", "", "URL POSTed before a viewer starts (RTMP play, HLS/DASH entry playlist); 2xx allows")
	fs.StringVar(&f.onUnpublish, "hook-on-unpublish", "", "URL POSTed when a broadcaster stopped (notice)")
	fs.StringVar(&f.onStop, "hook-on-stop", "", "URL POSTed when a viewer stopped (notice; HLS/DASH: 30s without a request)")
	fs.DurationVar(&f.hookTimeout, "hook-timeout", 0, "timeout of one hook call (default 3s)")
	fs.BoolVar(&f.hookFailOpen, "hook-fail-open", false, "allow when on_publish/on_play cannot answer in time (default: refuse)")
}

// apply copies the flags that were set into cfg.
func (f *secureFlags) apply(set map[string]bool, cfg *config.Config) error {
	str := func(name string, dst *string, v string) {
		if set[name] {
			*dst = v
		}
	}
	str("rtmps", &cfg.RTMP.TLSListen, f.rtmps)
	str("https", &cfg.HTTP.TLSListen, f.https)
	str("tls-cert", &cfg.TLS.Cert, f.cert)
	str("tls-key", &cfg.TLS.Key, f.key)
	str("admin-http", &cfg.HTTP.AdminListen, f.adminHTTP)
	str("admin-token", &cfg.HTTP.AdminToken, f.adminToken)
	str("play-token-secret", &cfg.Play.TokenSecret, f.playTokenSecret)
	str("hook-on-publish", &cfg.Hooks.OnPublish, f.onPublish)
	str("hook-on-play", &cfg.Hooks.OnPlay, f.onPlay)
	str("hook-on-unpublish", &cfg.Hooks.OnUnpublish, f.onUnpublish)
	str("hook-on-stop", &cfg.Hooks.OnStop, f.onStop)
	if set["public-status"] {
		cfg.HTTP.PublicStatus = f.publicStatus
	}
	if set["hook-timeout"] {
		cfg.Hooks.Timeout = f.hookTimeout
	}
	if set["hook-fail-open"] {
		cfg.Hooks.FailOpen = f.hookFailOpen
	}
	if set["play-protect"] {
		cfg.Play.Protect = nil
		for _, a := range strings.Split(f.playProtect, ",") {
			if a = strings.TrimSpace(a); a != "" {
				cfg.Play.Protect = append(cfg.Play.Protect, a)
			}
		}
	}
	for _, kv := range f.playKeys {
		name, key, ok := strings.Cut(kv, "=")
		if !ok || name == "" || key == "" {
			return fmt.Errorf("--play-key: want APP=KEY, APP/NAME=KEY or *=KEY")
		}
		if cfg.Play.Keys == nil {
			cfg.Play.Keys = map[string]string{}
		}
		cfg.Play.Keys[name] = key
	}
	for name, key := range cfg.Play.Keys {
		if !gate.PathSafe(key) {
			return fmt.Errorf("play key of %q: use up to 256 of A-Z a-z 0-9 . _ ~ - (it goes into HLS/DASH paths)", name)
		}
	}
	if (cfg.RTMP.TLSListen != "" || cfg.HTTP.TLSListen != "") && (cfg.TLS.Cert == "" || cfg.TLS.Key == "") {
		return fmt.Errorf("--rtmps and --https need --tls-cert and --tls-key (tls.cert, tls.key)")
	}
	return nil
}

// secure is what a node adds for TLS, the admin API, play authorization
// and hooks.
type secure struct {
	certs            *certreload.Reloader
	rtmpsLn, httpsLn net.Listener
	adminLn          net.Listener
	policy           adminauth.Policy
	hooks            *hooks.Client
	gate             *gate.Gate
}

// openSecure builds n.sec from n.cfg and opens its listeners; on error
// the listeners it opened are closed.
func (n *node) openSecure(server string) (err error) {
	cfg := n.cfg
	s := &n.sec
	defer func() {
		if err != nil {
			for _, ln := range []net.Listener{s.rtmpsLn, s.httpsLn, s.adminLn} {
				if ln != nil {
					ln.Close()
				}
			}
		}
	}()
	if cfg.RTMP.TLSListen != "" || cfg.HTTP.TLSListen != "" {
		if s.certs, err = certreload.New(cfg.TLS.Cert, cfg.TLS.Key, n.log); err != nil {
			return err
		}
	}
	if cfg.RTMP.TLSListen != "" {
		ln, err := net.Listen("tcp", cfg.RTMP.TLSListen)
		if err != nil {
			return fmt.Errorf("rtmps listen: %w", err)
		}
		s.rtmpsLn = tls.NewListener(ln, s.certs.ServerConfig(false))
	}
	if cfg.HTTP.TLSListen != "" {
		ln, err := net.Listen("tcp", cfg.HTTP.TLSListen)
		if err != nil {
			return fmt.Errorf("https listen: %w", err)
		}
		s.httpsLn = tls.NewListener(ln, s.certs.ServerConfig(true))
	}
	if cfg.HTTP.AdminListen != "" {
		if s.adminLn, err = net.Listen("tcp", cfg.HTTP.AdminListen); err != nil {
			return fmt.Errorf("admin http listen: %w", err)
		}
	}
	s.policy = adminauth.Policy{Token: cfg.HTTP.AdminToken, Separate: s.adminLn != nil, PrivateStatus: !cfg.HTTP.PublicStatus}
	h := cfg.Hooks
	hc := hooks.Config{OnPublish: h.OnPublish, OnPlay: h.OnPlay, OnUnpublish: h.OnUnpublish, OnStop: h.OnStop,
		Timeout: h.Timeout, FailOpen: h.FailOpen, Queue: h.Queue, Server: server, Log: n.log.With("component", "hooks")}
	if hc.Enabled() {
		s.hooks = hooks.New(hc)
		if err := s.hooks.Register(n.http.Registry); err != nil {
			return err
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
	return s.gate.Register(n.http.Registry)
}

// upstreamCredentials is a relay's relay.UpstreamConfig.Credentials: nil
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
	return certreload.ClientConfig(cfg.Relay.UpstreamCA)
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
