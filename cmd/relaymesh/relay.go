package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/internal/httpserver"
	"github.com/relaymesh/relaymesh/internal/hub"
	"github.com/relaymesh/relaymesh/internal/rtmp"
	"github.com/relaymesh/relaymesh/internal/serve"
	"github.com/relaymesh/relaymesh/packager"
	"github.com/relaymesh/relaymesh/relay/pull"
)

func init() {
	register(command{name: "relay", summary: "run a relay: pulls streams from upstream and serves viewers", run: runRelay})
}

// relayFlags are relaymesh relay's flags over its defaults.
func relayFlags(cfg *config.Config) *cmdFlags {
	cfg.RTMP.Listen, cfg.HTTP.Listen = "127.0.0.1:1936", "127.0.0.1:8081"
	c := newCmdFlags("relay", cfg)
	bindNode(c)
	r := &cfg.Relay
	c.String(&r.ID, "id", "relay.id", "relay id (required)")
	c.String(&r.Location, "location", "relay.location", "location of this relay in the graph")
	c.String(&r.Upstream, "upstream", "relay.upstream", "rtmp://HOST:PORT or rtmps://HOST:PORT of the primary or a parent relay (required)")
	c.String(&r.UpstreamCA, "upstream-ca", "relay.upstream_ca", "PEM file of the CAs that sign an rtmps:// upstream's certificate (default: the system's roots)")
	c.Duration(&r.Linger, "linger", "relay.linger", "keep pulling a stream this long after its last viewer")
	c.String(&r.Redirect, "redirect", "relay.redirect", "on drain, tell RTMP viewers to play again through this URL: a redirector (http://HOST:PORT) or a server (rtmp://HOST:PORT)")
	bindAgent(c)
	return c
}

func runRelay(ctx context.Context, args []string) error {
	cfg := config.Default()
	log, err := relayFlags(&cfg).parse(args)
	if err != nil {
		return err
	}
	if cfg.Relay.ID == "" || cfg.Relay.Upstream == "" {
		return errors.New("relay.id (--id) and relay.upstream (--upstream rtmp://HOST:PORT) are required")
	}
	if err := checkSecure(cfg); err != nil {
		return err
	}
	cc := connConfig(cfg.RTMP)
	if cc.TLS, err = upstreamTLS(cfg); err != nil {
		return err
	}
	redirectTo, err := serve.RedirectTo(cfg.Relay.Redirect)
	if err != nil {
		return err
	}
	log = log.With("role", "relay", "relay", cfg.Relay.ID)
	n, err := newNode(cfg, log)
	if err != nil {
		return err
	}
	n.leave = rtmp.LeaveNotice{Description: "relay " + cfg.Relay.ID + " is draining", Redirect: redirectTo.Play, ConnectRedirect: redirectTo.Connect}
	// Pulls outlive the RTMP drain: viewers are told to leave first, and
	// downstream relays keep their streams until the drain ends.
	upCtx, stopPulls := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPulls()
	up, err := pull.New(upCtx, pull.Config{
		URL: cfg.Relay.Upstream, RelayID: cfg.Relay.ID, Linger: cfg.Relay.Linger, Conn: cc,
		Credentials: n.upstreamCredentials(),
	}, n.hubs, log)
	if err != nil {
		return err
	}
	n.watchUpstream(up)
	n.http.Mux.HandleFunc("GET /api/v1/pulls", func(w http.ResponseWriter, r *http.Request) {
		httpserver.WriteJSON(w, http.StatusOK, map[string]any{"id": cfg.Relay.ID, "location": cfg.Relay.Location, "pulls": up.Pulls()})
	})
	n.src = pullingSource(n.hubs, up)
	sor, err := soRelay(ctx, cfg, cc, log) // shared objects and RPC (so.go)
	if err != nil {
		return err
	}
	h := serve.NewHandler(serve.Options{Hubs: n.hubs, Upstream: up, Sessions: sor, Grace: cfg.RTMP.Grace, Log: log})
	log.Info("relay listening", append([]any{"rtmp", n.rtmpLn.Addr().String(), "http", n.httpLn.Addr().String(), "upstream", cfg.Relay.Upstream, "location", cfg.Relay.Location}, n.secureAddrs()...)...)
	conn, err := startAgent(ctx, cfg, n, cfg.Relay.ID, cfg.Relay.Location, up, log)
	if err != nil {
		return err
	}
	if conn != nil {
		defer conn.Close()
	}
	return n.run(ctx, h)
}

// pullingSource is a relay's packager source: HTTP viewers make the relay
// pull the stream from upstream just like RTMP viewers do.
func pullingSource(hubs *hub.Registry, up *pull.Upstream) packager.Source {
	hubSrc := packager.HubSource{Registry: hubs}
	return packager.SourceFunc(func(ctx context.Context, app, name string) (packager.Subscription, error) {
		if err := up.Ensure(ctx, app, name, ""); err != nil {
			return nil, fmt.Errorf("%s/%s: %w (%v)", app, name, packager.ErrNotFound, err)
		}
		sub, err := hubSrc.Subscribe(ctx, app, name)
		if err != nil {
			return nil, err
		}
		return followPull(sub, up, app, name), nil
	})
}
