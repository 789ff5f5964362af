package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/relaymesh/relaymesh/internal/certreload"
	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/internal/playtoken"
)

// bindRedirectorSecure binds the orchestrator's flags for the play tokens
// the redirector issues, and HTTPS for the redirector, the mesh API and the
// dashboard.
func bindRedirectorSecure(c *cmdFlags) {
	cfg := c.cfg
	o := &cfg.Orchestrator
	c.String(&cfg.Play.TokenSecret, "play-token-secret", "play.token_secret", "secret that signs the play tokens redirects carry (?token=); the relays' and primary's --play-token-secret (default: none, redirects carry no token)")
	c.Duration(&o.PlayTokenTTL, "play-token-ttl", "orchestrator.play_token_ttl", "lifetime of an issued play token: a viewer must start playing within it (a playing one goes on)")
	c.Duration(&o.PlayTokenStep, "play-token-step", "orchestrator.play_token_step", "expiries are rounded up to a multiple of this, so viewers of a stream share one token (and CDN cache entries)")
	c.String(&cfg.HTTP.TLSListen, "https", "http.tls_listen", "HTTPS listen address serving what --http serves (needs --tls-cert and --tls-key; default: none)")
	bindTLS(c)
}

// playTokenSigner signs the play tokens of redirects (nil without a
// secret: redirects carry none).
func playTokenSigner(secret string, ttl, step time.Duration) func(app, name string) string {
	if secret == "" {
		return nil
	}
	key := []byte(secret)
	return func(app, name string) string {
		return playtoken.Sign(key, app, name, playtoken.Window(time.Now(), ttl, step))
	}
}

// openOrchestratorHTTPS opens the HTTPS listener of http.tls_listen, with
// a certificate reloaded when its files change (nil when not configured).
func openOrchestratorHTTPS(cfg config.Config, log *slog.Logger) (net.Listener, error) {
	if cfg.HTTP.TLSListen == "" {
		return nil, nil
	}
	certs, err := certreload.New(cfg.TLS.Cert, cfg.TLS.Key, log)
	if err != nil {
		return nil, fmt.Errorf("tls.cert, tls.key (--tls-cert, --tls-key): %w", err)
	}
	ln, err := net.Listen("tcp", cfg.HTTP.TLSListen)
	if err != nil {
		return nil, fmt.Errorf("https listen (http.tls_listen, --https): %w", err)
	}
	return tls.NewListener(ln, certs.ServerConfig(true)), nil
}
