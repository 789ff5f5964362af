package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/internal/httpserver"
	"github.com/relaymesh/relaymesh/internal/rtmp"
	"github.com/relaymesh/relaymesh/packager"
	"github.com/relaymesh/relaymesh/relay"
	"github.com/relaymesh/relaymesh/relay/hub"
)

// multiFlag collects repeated flags.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// nodeFlags are the flags primary and relay share; each overrides the
// config file when given.
type nodeFlags struct {
	config, rtmpAddr, httpAddr, logLevel, logFormat string
	pprof                                           bool
	sec                                             secureFlags // secure.go
}

func (n *nodeFlags) register(fs *flag.FlagSet, defRTMP, defHTTP string) {
	fs.StringVar(&n.config, "config", "", "YAML configuration file (see docs/configuration.md)")
	fs.StringVar(&n.rtmpAddr, "rtmp", "", "RTMP listen address (default "+defRTMP+")")
	fs.StringVar(&n.httpAddr, "http", "", "HTTP listen address for /healthz, /metrics, /api/v1/streams (default "+defHTTP+")")
	fs.StringVar(&n.logLevel, "log-level", "", "debug, info, warn or error (default info)")
	fs.StringVar(&n.logFormat, "log-format", "", "text or json (default text)")
	fs.BoolVar(&n.pprof, "pprof", false, "serve /debug/pprof/ on the HTTP listener")
	n.sec.register(fs)
}

// load reads the config file and applies the flags that were set.
func (n *nodeFlags) load(fs *flag.FlagSet, defRTMP, defHTTP string) (config.Config, *slog.Logger, error) {
	cfg, err := config.Load(n.config)
	if err != nil {
		return cfg, nil, err
	}
	if n.config == "" {
		cfg.RTMP.Listen, cfg.HTTP.Listen = defRTMP, defHTTP
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["rtmp"] {
		cfg.RTMP.Listen = n.rtmpAddr
	}
	if set["http"] {
		cfg.HTTP.Listen = n.httpAddr
	}
	if set["log-level"] {
		cfg.Log.Level = n.logLevel
	}
	if set["pprof"] {
		cfg.HTTP.Pprof = n.pprof
	}
	if set["log-format"] {
		cfg.Log.Format = n.logFormat
	}
	if err := n.sec.apply(set, &cfg); err != nil {
		return cfg, nil, err
	}
	log, err := newLogger(cfg.Log.Level, cfg.Log.Format)
	return cfg, log, err
}

func hubConfig(c config.Hub, r config.RTMP) hub.Config {
	return hub.Config{
		WriteBatch:        r.WriteBatch,
		ViewerQueue:       c.ViewerQueue,
		ViewerQueueFrames: c.ViewerQueueFrames,
		SlowViewerTimeout: c.SlowViewerTimeout,
		GOPCacheMaxFrames: c.GOPCacheMaxFrames,
		GOPCacheMaxBytes:  c.GOPCacheMaxBytes,
	}.WithDefaults()
}

func connConfig(c config.RTMP) rtmp.ConnConfig {
	return rtmp.ConnConfig{
		HandshakeTimeout: c.HandshakeTimeout,
		ReadTimeout:      c.IdleTimeout,
		WriteTimeout:     c.WriteTimeout,
		MaxMessageSize:   c.MaxMessageSize,
		SendBuffer:       c.ViewerSendBuffer,
		WriteBatch:       c.WriteBatch,
	}.WithDefaults()
}

// node is a running primary or relay: an RTMP server and an HTTP server.
type node struct {
	cfg    config.Config
	log    *slog.Logger
	hubs   *hub.Registry
	http   *httpserver.Server
	rtmpLn net.Listener
	httpLn net.Listener
	server *relay.Server
	src    packager.Source
	pkg    *packager.Packager
	sec    secure // TLS, admin API, play authorization, hooks (secure.go)
}

// packagerConfig maps the config file's hls section.
func packagerConfig(c config.HLS, log *slog.Logger, reg prometheus.Registerer) (packager.Config, error) {
	format := func(f string) (packager.HLSFormat, error) {
		switch f {
		case "", "llhls":
			return packager.HLSLowLatency, nil
		case "fmp4":
			return packager.HLSFMP4, nil
		case "mpegts":
			return packager.HLSMPEGTS, nil
		}
		return "", fmt.Errorf("hls format %q: want llhls, fmp4 or mpegts", f)
	}
	def, err := format(c.Format)
	if err != nil {
		return packager.Config{}, err
	}
	pc := packager.Config{
		Logger: log, Registerer: reg, Default: packager.AppConfig{HLS: def}, Apps: map[string]packager.AppConfig{},
		Linger: c.Linger, SegmentMinDuration: c.SegmentMinDuration, PartTarget: c.PartTarget, SegmentCount: c.SegmentCount,
	}
	for app, f := range c.Apps {
		hf, err := format(f)
		if err != nil {
			return pc, fmt.Errorf("hls.apps.%s: %w", app, err)
		}
		pc.Apps[app] = packager.AppConfig{HLS: hf}
	}
	for _, app := range c.AlwaysOn {
		ac, ok := pc.Apps[app]
		if !ok {
			ac = pc.Default
		}
		ac.AlwaysOn = true
		pc.Apps[app] = ac
	}
	return pc, nil
}

func newNode(cfg config.Config, log *slog.Logger) (*node, error) {
	n := &node{cfg: cfg, log: log, http: httpserver.New(log)}
	n.hubs = hub.NewRegistry(hubConfig(cfg.Hub, cfg.RTMP), log)
	if err := n.hubs.RegisterMetrics(n.http.Registry); err != nil {
		return nil, err
	}
	n.http.Mux.Handle("GET /api/v1/streams", relay.StreamsHandler(n.hubs))
	// Primaries serve HLS/DASH of what is published here; a relay replaces
	// the source with one that pulls from upstream first (setPackagerSource).
	n.src = packager.HubSource{Registry: n.hubs}
	if cfg.HTTP.Pprof {
		n.http.EnablePprof()
	}
	var err error
	if n.rtmpLn, err = net.Listen("tcp", cfg.RTMP.Listen); err != nil {
		return nil, fmt.Errorf("rtmp listen: %w", err)
	}
	if n.httpLn, err = net.Listen("tcp", cfg.HTTP.Listen); err != nil {
		n.rtmpLn.Close()
		return nil, fmt.Errorf("http listen: %w", err)
	}
	server := cfg.Relay.ID
	if server == "" {
		server = "primary"
	}
	if err := n.openSecure(server); err != nil {
		n.rtmpLn.Close()
		n.httpLn.Close()
		return nil, err
	}
	return n, nil
}

// run serves until ctx ends, then drains and stops.
func (n *node) run(ctx context.Context, h rtmp.Handler) error {
	h = n.sec.gate.Wrap(h)
	n.server = &relay.Server{Handler: h, Conn: connConfig(n.cfg.RTMP), Log: n.log, MaxConns: n.cfg.RTMP.MaxConnections}
	pc, err := packagerConfig(n.cfg.HLS, n.log.With("component", "packager"), n.http.Registry)
	if err != nil {
		return err
	}
	if n.pkg, err = packager.New(n.src, pc); err != nil {
		return err
	}
	defer n.pkg.Close()
	n.http.Mux.Handle("/hls/", n.sec.gate.HTTP(n.pkg.Handler()))
	n.http.Mux.Handle("/dash/", n.sec.gate.HTTP(n.pkg.Handler()))
	httpCtx, stopHTTP := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	var httpErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		httpErr = n.http.ServeHandler(httpCtx, n.httpLn, n.sec.policy.Public(n.http.Mux))
	}()
	var secErrs []error
	var secMu sync.Mutex
	n.serveSecure(ctx, httpCtx, func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && err.Error() != "http: Server closed" {
				secMu.Lock()
				secErrs = append(secErrs, err)
				secMu.Unlock()
			}
		}()
	})
	go func() {
		<-ctx.Done()
		n.http.SetDraining(true)
	}()
	err = n.server.Serve(ctx, n.rtmpLn, n.cfg.RTMP.Drain)
	stopHTTP()
	wg.Wait()
	if err == nil && httpErr != nil && httpErr.Error() != "http: Server closed" {
		err = httpErr
	}
	if err == nil && len(secErrs) > 0 {
		err = secErrs[0]
	}
	n.log.Info("stopped")
	return err
}
