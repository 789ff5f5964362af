package main

import (
	"context"

	"github.com/relaymesh/relaymesh/ingest"
	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/internal/serve"
)

func init() {
	register(command{name: "primary", summary: "run the primary: broadcasters publish here", run: runPrimary})
}

// primaryFlags are relaymesh primary's flags over its defaults.
func primaryFlags(cfg *config.Config) *cmdFlags {
	cfg.RTMP.Listen, cfg.HTTP.Listen = "127.0.0.1:1935", "127.0.0.1:8080"
	c := newCmdFlags("primary", cfg)
	bindNode(c)
	p := &cfg.Publish
	c.Map(&p.Keys, "publish-key", "publish.keys", "NAME=SECRET", "NAME=SECRET: publishers of stream NAME (or app/NAME, or * for any) use ?key=SECRET")
	c.String(&p.TokenSecret, "token-secret", "publish.token_secret", "secret for HMAC-signed publish tokens (?token=EXPIRY.SIG)")
	c.Bool(&p.Open, "open", "publish.open", "let anyone publish without a key (development only)")
	c.Bool(&p.Takeover, "takeover", "publish.takeover", "a new publisher replaces a live one instead of being refused")
	c.String(&cfg.Primary.ID, "id", "primary.id", "server id on the control plane (with --nats)")
	c.String(&cfg.Primary.Location, "location", "primary.location", "location of the primary in the graph (with --nats)")
	bindAgent(c)
	bindSO(c) // shared objects and RPC (so.go)
	return c
}

func runPrimary(ctx context.Context, args []string) error {
	cfg := config.Default()
	log, err := primaryFlags(&cfg).parse(args)
	if err != nil {
		return err
	}
	if err := checkSecure(cfg); err != nil {
		return err
	}
	if !cfg.Publish.Open && len(cfg.Publish.Keys) == 0 && cfg.Publish.TokenSecret == "" {
		log.Warn("no publish keys or token secret configured: every publisher will be refused (use --publish-key NAME=SECRET or --open)")
	}
	log = log.With("role", "primary")
	n, err := newNode(cfg, log)
	if err != nil {
		return err
	}
	n.id = cfg.Primary.ID
	in := ingest.New(ingest.Config{
		Auth:     ingest.Auth{Keys: cfg.Publish.Keys, TokenSecret: cfg.Publish.TokenSecret, Open: cfg.Publish.Open},
		Takeover: cfg.Publish.Takeover,
	}, n.hubs, log)
	conn, err := startAgent(ctx, cfg, n, cfg.Primary.ID, cfg.Primary.Location, nil, log)
	if err != nil {
		return err
	}
	if conn != nil {
		defer conn.Close() // after stopSO (deferred below) saved the objects
		announceStreams(ctx, conn, in, log)
	}
	sos, stopSO, err := soPrimary(n, log, conn)
	if err != nil {
		return err
	}
	defer stopSO()
	h := serve.NewHandler(serve.Options{Hubs: n.hubs, Publish: in.Publish, Sessions: sos, Grace: cfg.RTMP.Grace, Log: log})
	log.Info("primary listening", append([]any{"rtmp", n.rtmpLn.Addr().String(), "http", n.httpLn.Addr().String()}, n.secureAddrs()...)...)
	return n.run(ctx, h)
}
