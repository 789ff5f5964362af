package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/internal/gcpace"
	"github.com/relaymesh/relaymesh/internal/httpserver"
	"github.com/relaymesh/relaymesh/internal/hub"
	"github.com/relaymesh/relaymesh/internal/rtmp"
	"github.com/relaymesh/relaymesh/internal/serve"
	"github.com/relaymesh/relaymesh/packager"
	"github.com/relaymesh/relaymesh/relay/agent"
	"github.com/relaymesh/relaymesh/relay/pull"
)

func hubConfig(c config.Hub, r config.RTMP) hub.Config {
	return hub.Config{
		WriteBatch:        r.WriteBatch,
		ViewerQueue:       c.ViewerQueue,
		ViewerQueueFrames: c.ViewerQueueFrames,
		SlowViewerTimeout: c.SlowViewerTimeout,
		GOPCacheMaxFrames: c.GOPCacheMaxFrames,
		GOPCacheMaxBytes:  c.GOPCacheMaxBytes,
		MetricsStreams:    c.MetricsStreams,
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
	server *serve.Server
	src    packager.Source
	pkg    *packager.Packager
	pkgRef atomic.Pointer[packager.Packager] // pkg, for readers on other goroutines (audience.go)
	id     string                            // server id: the steering pathway (default cfg.Relay.ID)
	leave  rtmp.LeaveNotice                  // what RTMP viewers are told on drain
	sec    secure                            // TLS, admin API, play authorization, hooks (secure.go)
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
		Linger: c.Linger, SegmentMinDuration: c.SegmentMinDuration, PartTarget: c.PartTarget, PartHoldBack: c.PartHoldBack, SegmentCount: c.SegmentCount,
		EndGrace: c.EndGrace, EndedLinger: c.EndedLinger, PublicBaseURL: c.PublicBaseURL,
	}
	for app, f := range c.Apps {
		hf, err := format(f)
		if err != nil {
			return pc, fmt.Errorf("hls.apps.%s: %w", app, err)
		}
		pc.Apps[app] = packager.AppConfig{HLS: hf}
	}
	for _, app := range c.DASHLowLatency {
		ac, ok := pc.Apps[app]
		if !ok {
			ac = pc.Default
		}
		ac.LowLatencyDASH = true
		pc.Apps[app] = ac
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
	if _, set := os.LookupEnv("GOGC"); !set {
		// A server's live heap is mostly connection state that lives as
		// long as its viewers, and it allocates little (a frame's payload,
		// once per stream): the collector's target follows the live heap
		// (gcpace; the runtime's default, 100, lets the heap grow to twice
		// its live size).
		debug.SetGCPercent(gcpace.MaxPercent) // run follows the live heap from here
	}
	rtmpLn, err := net.Listen("tcp", cfg.RTMP.Listen)
	if err != nil {
		return nil, fmt.Errorf("rtmp listen (rtmp.listen, --rtmp): %w", err)
	}
	httpLn, err := net.Listen("tcp", cfg.HTTP.Listen)
	if err != nil {
		rtmpLn.Close()
		return nil, fmt.Errorf("http listen (http.listen, --http): %w", err)
	}
	sl, err := openSecureListeners(cfg, log) // RTMPS, HTTPS, admin (secure.go)
	if err != nil {
		rtmpLn.Close()
		httpLn.Close()
		return nil, err
	}
	n := newNodeOn(cfg, log, rtmpLn, httpLn)
	n.setSecureListeners(sl)
	return n, nil
}

// newNodeOn is a node on listeners opened already.
func newNodeOn(cfg config.Config, log *slog.Logger, rtmpLn, httpLn net.Listener) *node {
	n := &node{cfg: cfg, log: log, http: httpserver.New(log), rtmpLn: rtmpLn, httpLn: httpLn}
	n.hubs = hub.NewRegistry(hubConfig(cfg.Hub, cfg.RTMP), log)
	if err := n.hubs.RegisterMetrics(n.http.Registry); err != nil {
		panic("relaymesh: hub metrics: " + err.Error()) // a fresh registry: names collide only by a bug
	}
	n.http.Mux.Handle("GET /api/v1/streams", serve.StreamsHandler(n.hubs, n.httpLoads))
	if err := n.http.Registry.Register(agent.ViewersCollector(n.stats(), n.hubs.StreamLabels)); err != nil {
		panic("relaymesh: viewer metrics: " + err.Error()) // a fresh registry: names collide only by a bug
	}
	// Primaries serve HLS/DASH of what is published here; a relay replaces
	// the source with one that pulls from upstream first (setPackagerSource).
	n.src = packager.HubSource{Registry: n.hubs}
	if cfg.HTTP.Pprof {
		n.http.EnablePprof()
	}
	n.initSecure()
	return n
}

// run serves until ctx ends, then drains and stops.
func (n *node) run(ctx context.Context, h rtmp.Handler) error {
	if _, set := os.LookupEnv("GOGC"); !set {
		go gcpace.Run(ctx)
	}
	h = n.sec.gate.Wrap(h) // play keys, tokens and hooks; its refusals are counted with the others
	n.server = &serve.Server{Handler: h, Conn: connConfig(n.cfg.RTMP), Log: n.log, MaxConns: n.cfg.RTMP.MaxConnections,
		Leave: n.leave, Skip: serve.IsRelay, Rounds: rtmp.FlusherConfig{Whole: n.cfg.RTMP.WholeRounds}}
	n.server.Conn.Metrics = rtmp.NewMetrics() // closes, handshake failures, timeouts, refusals
	if err := n.server.Conn.Metrics.Register(n.http.Registry); err != nil {
		return err
	}
	pc, err := packagerConfig(n.cfg.HLS, n.log.With("component", "packager"), n.http.Registry)
	if err != nil {
		return err
	}
	pc.Steering = steering(n.cfg.HLS.SteeringURL, n.serverID())
	if n.pkg, err = packager.New(n.src, pc); err != nil {
		return err
	}
	defer n.pkg.Close()
	n.pkgRef.Store(n.pkg)
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
		// HLS/DASH players see the end (EXT-X-ENDLIST, a static MPD) and
		// go back to the redirector, instead of a frozen picture.
		n.pkg.EndAll()
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

// watchUpstream exports a relay's upstream metrics and makes its /healthz
// fail while a stream it was told to hold cannot be pulled.
func (n *node) watchUpstream(up *pull.Upstream) {
	n.http.Registry.MustRegister(up.Collector())
	n.http.AddCheck("upstream", up.HeldHealth)
}
