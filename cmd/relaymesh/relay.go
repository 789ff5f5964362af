package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"

	"github.com/relaymesh/relaymesh/internal/httpserver"
	"github.com/relaymesh/relaymesh/packager"
	"github.com/relaymesh/relaymesh/relay"
	"github.com/relaymesh/relaymesh/relay/hub"
)

func init() {
	register(command{name: "relay", summary: "run a relay: pulls streams from upstream and serves viewers", run: runRelay})
}

func runRelay(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	var nf nodeFlags
	nf.register(fs, "127.0.0.1:1936", "127.0.0.1:8081")
	id := fs.String("id", "", "relay id (required)")
	location := fs.String("location", "", "location of this relay in the graph")
	upstream := fs.String("upstream", "", "rtmp://HOST:PORT or rtmps://HOST:PORT of the primary or a parent relay (required)")
	upstreamCA := fs.String("upstream-ca", "", "PEM file of the CAs that sign an rtmps:// upstream's certificate (default: the system's roots)")
	linger := fs.Duration("linger", 0, "keep pulling a stream this long after its last viewer (default 30s)")
	var af agentFlags
	af.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, log, err := nf.load(fs, "127.0.0.1:1936", "127.0.0.1:8081")
	if err != nil {
		return err
	}
	if *id != "" {
		cfg.Relay.ID = *id
	}
	if *location != "" {
		cfg.Relay.Location = *location
	}
	if *upstream != "" {
		cfg.Relay.Upstream = *upstream
	}
	if *upstreamCA != "" {
		cfg.Relay.UpstreamCA = *upstreamCA
	}
	if *linger > 0 {
		cfg.Relay.Linger = *linger
	}
	if cfg.Relay.ID == "" || cfg.Relay.Upstream == "" {
		return errors.New("--id and --upstream are required")
	}
	log = log.With("role", "relay", "relay", cfg.Relay.ID)
	n, err := newNode(cfg, log)
	if err != nil {
		return err
	}
	cc := connConfig(cfg.RTMP)
	if cc.TLS, err = upstreamTLS(cfg); err != nil {
		return err
	}
	up, err := relay.NewUpstream(ctx, relay.UpstreamConfig{
		URL: cfg.Relay.Upstream, RelayID: cfg.Relay.ID, Linger: cfg.Relay.Linger, Conn: cc,
		Credentials: n.upstreamCredentials(),
	}, n.hubs, log)
	if err != nil {
		return err
	}
	n.http.Mux.HandleFunc("GET /api/v1/pulls", func(w http.ResponseWriter, r *http.Request) {
		httpserver.WriteJSON(w, http.StatusOK, map[string]any{"id": cfg.Relay.ID, "location": cfg.Relay.Location, "pulls": up.Pulls()})
	})
	n.src = pullingSource(n.hubs, up)
	sor, err := soRelay(ctx, cfg, cc, log) // shared objects and RPC (so.go)
	if err != nil {
		return err
	}
	h := relay.NewHandler(relay.Options{Hubs: n.hubs, Upstream: up, Messages: sor.Message, Grace: cfg.RTMP.Grace, Log: log})
	log.Info("relay listening", append([]any{"rtmp", n.rtmpLn.Addr().String(), "http", n.httpLn.Addr().String(), "upstream", cfg.Relay.Upstream, "location", cfg.Relay.Location}, n.secureAddrs()...)...)
	conn, err := af.start(ctx, n, cfg.Relay.ID, cfg.Relay.Location, up, log)
	if err != nil {
		return err
	}
	if conn != nil {
		defer conn.Close()
	}
	return n.run(ctx, sor.Wrap(h))
}

// pullingSource is a relay's packager source: HTTP viewers make the relay
// pull the stream from upstream just like RTMP viewers do.
func pullingSource(hubs *hub.Registry, up *relay.Upstream) packager.Source {
	hubSrc := packager.HubSource{Registry: hubs}
	return packager.SourceFunc(func(ctx context.Context, app, name string) (packager.Subscription, error) {
		if err := up.Ensure(ctx, app, name, ""); err != nil {
			return nil, fmt.Errorf("%s/%s: %w (%v)", app, name, packager.ErrNotFound, err)
		}
		return hubSrc.Subscribe(ctx, app, name)
	})
}
