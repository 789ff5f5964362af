package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/relaymesh/relaymesh/ingest"
	"github.com/relaymesh/relaymesh/relay"
)

func init() {
	register(command{name: "primary", summary: "run the primary: broadcasters publish here", run: runPrimary})
}

func runPrimary(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("primary", flag.ContinueOnError)
	var nf nodeFlags
	nf.register(fs, "127.0.0.1:1935", "127.0.0.1:8080")
	var keys multiFlag
	fs.Var(&keys, "publish-key", "NAME=SECRET: publishers of stream NAME (or app/NAME, or * for any) use ?key=SECRET; repeatable")
	tokenSecret := fs.String("token-secret", "", "secret for HMAC-signed publish tokens (?token=EXPIRY.SIG)")
	open := fs.Bool("open", false, "let anyone publish without a key (development only)")
	takeover := fs.Bool("takeover", false, "a new publisher replaces a live one instead of being refused")
	id := fs.String("id", "primary", "server id on the control plane (with --nats)")
	location := fs.String("location", "", "location of the primary in the graph (with --nats)")
	var af agentFlags
	af.register(fs)
	var sof soFlags // shared objects and RPC (so.go)
	sof.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, log, err := nf.load(fs, "127.0.0.1:1935", "127.0.0.1:8080")
	if err != nil {
		return err
	}
	if cfg.Publish.Keys == nil {
		cfg.Publish.Keys = map[string]string{}
	}
	for _, kv := range keys {
		name, secret, ok := strings.Cut(kv, "=")
		if !ok || name == "" || secret == "" {
			return fmt.Errorf("--publish-key %q: want NAME=SECRET", kv)
		}
		cfg.Publish.Keys[name] = secret
	}
	if *tokenSecret != "" {
		cfg.Publish.TokenSecret = *tokenSecret
	}
	cfg.Publish.Open = cfg.Publish.Open || *open
	cfg.Publish.Takeover = cfg.Publish.Takeover || *takeover
	if !cfg.Publish.Open && len(cfg.Publish.Keys) == 0 && cfg.Publish.TokenSecret == "" {
		log.Warn("no publish keys or token secret configured: every publisher will be refused (use --publish-key NAME=SECRET or --open)")
	}
	log = log.With("role", "primary")
	n, err := newNode(cfg, log)
	if err != nil {
		return err
	}
	in := ingest.New(ingest.Config{
		Auth:     ingest.Auth{Keys: cfg.Publish.Keys, TokenSecret: cfg.Publish.TokenSecret, Open: cfg.Publish.Open},
		Takeover: cfg.Publish.Takeover,
	}, n.hubs, log)
	conn, err := af.start(ctx, n, *id, *location, nil, log)
	if err != nil {
		return err
	}
	if conn != nil {
		defer conn.Close() // after stopSO (deferred below) saved the objects
		announceStreams(ctx, conn, in, log)
	}
	sos, stopSO, err := sof.primary(n, log, conn)
	if err != nil {
		return err
	}
	defer stopSO()
	h := relay.NewHandler(relay.Options{Hubs: n.hubs, Publish: in.Publish, Messages: sos.Message, Grace: cfg.RTMP.Grace, Log: log})
	log.Info("primary listening", append([]any{"rtmp", n.rtmpLn.Addr().String(), "http", n.httpLn.Addr().String()}, n.secureAddrs()...)...)
	return n.run(ctx, sos.Wrap(h))
}
