package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/relaymesh/relaymesh/geo"
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/internal/httpserver"
	"github.com/relaymesh/relaymesh/topology/dashboard"
	"github.com/relaymesh/relaymesh/topology/demand"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/orchestrator"
	"github.com/relaymesh/relaymesh/topology/redirector"
)

func init() {
	register(command{name: "orchestrator", summary: "run the orchestrator and redirector: opens relays where demand builds up", run: runOrchestrator})
}

// busConnect returns a bus connection and a cleanup function: to the
// cluster of nats.urls, or to an embedded server when it is empty.
func busConnect(nc config.NATS, name string, log *slog.Logger) (*bus.Conn, func(), error) {
	if nc.URLs != "" {
		c, err := bus.Connect(bus.Options{URLs: nc.URLs, Name: name, CredsFile: nc.Creds, NKeyFile: nc.NKey,
			CAFile: nc.CA, CertFile: nc.Cert, KeyFile: nc.Key}, log)
		if err != nil {
			return nil, nil, err
		}
		return c, c.Close, nil
	}
	dir, tmp := nc.DataDir, false
	if dir == "" {
		d, err := os.MkdirTemp("", "relaymesh-nats-")
		if err != nil {
			return nil, nil, err
		}
		dir, tmp = d, true
	}
	e, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: filepath.Join(dir, "jetstream"), Listen: nc.Listen}, log)
	if err != nil {
		return nil, nil, err
	}
	c, err := bus.Connect(bus.Options{InProcess: e.Server(), Name: name}, log)
	if err != nil {
		e.Shutdown()
		return nil, nil, err
	}
	return c, func() {
		c.Close()
		e.Shutdown()
		if tmp {
			os.RemoveAll(dir)
		}
	}, nil
}

// loadGraph reads a graph file, or returns the development world graph. A
// file with servers and no locations places them in the built-in world
// graph (its hubs eu, na, … and countries by ISO code).
func loadGraph(path string) (*graph.Graph, error) {
	if path == "" {
		return graph.DevWorld()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("orchestrator.graph (--graph): %w", err)
	}
	f, err := graph.Parse(path, data)
	if err != nil {
		return nil, err
	}
	if len(f.Locations) == 0 {
		return graph.World(f.Servers...)
	}
	var b graph.Builder
	b.AddFile(f)
	return b.Build()
}

func openGeo(path string) (*geo.DB, error) {
	if path == "" {
		return geo.OpenDefault()
	}
	db, err := geo.Open(path, geo.OpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("orchestrator.geoip (--geoip): %w", err)
	}
	return db, nil
}

func bonusAdapter(o *orchestrator.Orchestrator) func() []redirector.BonusInfo {
	return func() []redirector.BonusInfo {
		bs := o.Bonuses()
		out := make([]redirector.BonusInfo, len(bs))
		for i, b := range bs {
			out[i] = redirector.BonusInfo(b)
		}
		return out
	}
}

// serveHTTP serves h on ln until ctx ends.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// bindControlPlane binds the flags orchestrator and dev share.
func bindControlPlane(c *cmdFlags) {
	o := &c.cfg.Orchestrator
	c.String(&o.Graph, "graph", "orchestrator.graph", "location graph file with servers (default: the built-in world with a primary and relays at eu, na, as, sa)")
	c.String(&o.GeoIP, "geoip", "orchestrator.geoip", "MaxMind City database (default: the small built-in demo database)")
	c.Float(&o.Threshold, "threshold", "orchestrator.threshold", "demand bonus that opens a relay (0: 50)")
}

// orchestratorFlags are relaymesh orchestrator's flags over its defaults.
func orchestratorFlags(cfg *config.Config) *cmdFlags {
	cfg.HTTP.Listen = "127.0.0.1:8090"
	c := newCmdFlags("orchestrator", cfg)
	bindNATS(c, "NATS cluster URLs (nats://host:4222,…); empty: run an embedded NATS server")
	n := &cfg.NATS
	c.String(&n.DataDir, "data-dir", "nats.data_dir", "embedded NATS: JetStream store directory (default: a temporary directory)")
	c.String(&n.Listen, "nats-listen", "nats.listen", "embedded NATS: address other processes connect to (empty: in-process only)")
	bindControlPlane(c)
	o := &cfg.Orchestrator
	c.String(&cfg.HTTP.Listen, "http", "http.listen", "HTTP listen address of the redirector, mesh API, dashboard, /healthz and /metrics")
	c.String(&o.ID, "id", "orchestrator.id", "instance id in the leadership lease (default host-pid)")
	c.String(&o.TrustedProxies, "trusted-proxies", "orchestrator.trusted_proxies", "comma-separated addresses/prefixes whose X-Forwarded-For is believed")
	c.String(&o.TokenSecret, "token-secret", "orchestrator.token_secret", "key that signs sticky tokens; share it between redirectors (default random)")
	c.Bool(&o.DevIP, "dev-ip", "orchestrator.dev_ip", "honour ?ip=ADDR on /play (development only)")
	c.String(&o.OverflowURL, "overflow-url", "orchestrator.overflow_url", "external CDN URL prefix for HLS/DASH viewers when every server is full (e.g. https://cdn.example.net)")
	c.Duration(&o.SteeringTTL, "steering-ttl", "orchestrator.steering_ttl", "TTL of content steering answers: how soon HLS/DASH players following steering leave a draining relay (default 5s)")
	c.Duration(&o.DASHSteeringTTL, "dash-steering-ttl", "orchestrator.dash_steering_ttl", "TTL of the DASH content steering answers: how soon dash.js leaves a dead or draining relay (default 2s)")
	bindRedirectorSecure(c) // play tokens and HTTPS (secure_orchestrator.go)
	bindLog(c)
	return c
}

func runOrchestrator(ctx context.Context, args []string) error {
	cfg := config.Default()
	log, err := orchestratorFlags(&cfg).parse(args)
	if err != nil {
		return err
	}
	o := cfg.Orchestrator
	g, err := loadGraph(o.Graph)
	if err != nil {
		return err
	}
	db, err := openGeo(o.GeoIP)
	if err != nil {
		return err
	}
	tp, err := redirector.ParseTrusted(o.TrustedProxies)
	if err != nil {
		return fmt.Errorf("orchestrator.trusted_proxies (--trusted-proxies): %w", err)
	}
	conn, cleanup, err := busConnect(cfg.NATS, "relaymesh-orchestrator", log)
	if err != nil {
		return err
	}
	defer cleanup()
	ln, err := net.Listen("tcp", cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("http listen: %w", err)
	}
	httpsLn, err := openOrchestratorHTTPS(cfg, log) // secure_orchestrator.go
	if err != nil {
		ln.Close()
		return err
	}
	return runControlPlane(ctx, controlPlane{graph: g, geo: db, conn: conn, ln: ln, id: o.ID, trusted: tp,
		tokenKey: []byte(o.TokenSecret), threshold: o.Threshold, devIP: o.DevIP, overflowURL: o.OverflowURL, steeringTTL: o.SteeringTTL, dashSteeringTTL: o.DASHSteeringTTL,
		playToken: playTokenSigner(cfg.Play.TokenSecret, o.PlayTokenTTL, o.PlayTokenStep), httpsLn: httpsLn, log: log})
}

// controlPlane is an orchestrator with its redirector on one HTTP listener.
type controlPlane struct {
	graph     *graph.Graph
	geo       geo.Locator
	conn      *bus.Conn
	ln        net.Listener
	id        string
	trusted   []netip.Prefix
	tokenKey  []byte
	threshold float64
	devIP     bool
	// overflowURL: HLS/DASH viewers spill here when every server is full.
	overflowURL     string
	steeringTTL     time.Duration // 0: the redirector's default
	dashSteeringTTL time.Duration // 0: the redirector's default
	log             *slog.Logger
	// playToken signs the play tokens of redirects; httpsLn serves the
	// same as ln over TLS (secure_orchestrator.go).
	playToken func(app, name string) string
	httpsLn   net.Listener
}

func runControlPlane(ctx context.Context, cp controlPlane) error {
	o, err := orchestrator.New(orchestrator.Config{ID: cp.id, Graph: cp.graph, Demand: demand.Config{Threshold: cp.threshold}}, cp.conn, cp.log)
	if err != nil {
		return err
	}
	r, err := redirector.New(redirector.Config{ID: cp.id, Graph: cp.graph, Geo: cp.geo, TokenKey: cp.tokenKey,
		TrustedProxies: cp.trusted, DevIP: cp.devIP, Bonus: bonusAdapter(o), OverflowURL: cp.overflowURL, SteeringTTL: cp.steeringTTL, DASHSteeringTTL: cp.dashSteeringTTL,
		PlayToken: cp.playToken}, cp.conn, cp.log)
	if err != nil {
		return err
	}
	d, err := dashboard.New(dashboard.Config{Graph: cp.graph, Mesh: r.View, Decisions: o.Decisions, Leader: o.Leader}, cp.log)
	if err != nil {
		return err
	}
	// /healthz, /metrics (decisions, commands, lease changes, redirects,
	// build info, request durations), the redirector and the dashboard.
	srv := httpserver.New(cp.log)
	srv.Registry.MustRegister(o.Collector(), r.Collector())
	srv.AddCheck("nats", func() error {
		if !cp.conn.NC.IsConnected() {
			return fmt.Errorf("not connected to NATS (%s): placements and statuses are not updated", cp.conn.NC.Status())
		}
		return nil
	})
	r.Mount(srv.Mux)
	d.Mount(srv.Mux)
	var wg sync.WaitGroup
	runs := []func() error{
		func() error { return o.Run(ctx) },
		func() error { return r.Run(ctx) },
		func() error { return d.Run(ctx) },
		func() error { return srv.Serve(ctx, cp.ln) },
	}
	if cp.httpsLn != nil {
		runs = append(runs, func() error { return srv.Serve(ctx, cp.httpsLn) })
	}
	errs := make([]error, len(runs))
	for i, f := range runs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f() }()
	}
	if cp.httpsLn != nil {
		cp.log.Info("orchestrator and redirector listening", "http", cp.ln.Addr().String(), "https", cp.httpsLn.Addr().String())
	} else {
		cp.log.Info("orchestrator and redirector listening", "http", cp.ln.Addr().String())
	}
	wg.Wait()
	return errors.Join(errs...)
}
