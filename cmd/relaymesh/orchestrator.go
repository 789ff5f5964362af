package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
	"github.com/relaymesh/relaymesh/topology/dashboard"
	"github.com/relaymesh/relaymesh/topology/demand"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/orchestrator"
	"github.com/relaymesh/relaymesh/topology/redirector"
)

func init() {
	register(command{name: "orchestrator", summary: "run the orchestrator and redirector: opens relays where demand builds up", run: runOrchestrator})
}

// busFlags say how to reach NATS: an external cluster, or an embedded server.
type busFlags struct {
	urls, creds, nkey, ca, cert, key, dataDir, listen string
}

func (b *busFlags) register(fs *flag.FlagSet, defListen string) {
	fs.StringVar(&b.urls, "nats", "", "NATS cluster URLs (nats://host:4222,…); empty: run an embedded NATS server")
	fs.StringVar(&b.creds, "nats-creds", "", "NATS credentials file")
	fs.StringVar(&b.nkey, "nats-nkey", "", "NATS NKey seed file")
	fs.StringVar(&b.ca, "nats-ca", "", "CA bundle that signs the NATS servers' certificates")
	fs.StringVar(&b.cert, "nats-cert", "", "client certificate for NATS (with --nats-key)")
	fs.StringVar(&b.key, "nats-key", "", "client key for NATS")
	fs.StringVar(&b.dataDir, "data-dir", "", "embedded NATS: JetStream store directory (default: a temporary directory)")
	fs.StringVar(&b.listen, "nats-listen", defListen, "embedded NATS: address other processes connect to (empty: in-process only)")
}

// connect returns a bus connection and a cleanup function.
func (b *busFlags) connect(name string, log *slog.Logger) (*bus.Conn, func(), error) {
	if b.urls != "" {
		c, err := bus.Connect(bus.Options{URLs: b.urls, Name: name, CredsFile: b.creds, NKeyFile: b.nkey,
			CAFile: b.ca, CertFile: b.cert, KeyFile: b.key}, log)
		if err != nil {
			return nil, nil, err
		}
		return c, c.Close, nil
	}
	dir, tmp := b.dataDir, false
	if dir == "" {
		d, err := os.MkdirTemp("", "relaymesh-nats-")
		if err != nil {
			return nil, nil, err
		}
		dir, tmp = d, true
	}
	e, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: filepath.Join(dir, "jetstream"), Listen: b.listen}, log)
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

// loadGraph reads a graph file, or returns the development world graph.
func loadGraph(path string) (*graph.Graph, error) {
	if path == "" {
		return graph.DevWorld()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := graph.Parse(path, data)
	if err != nil {
		return nil, err
	}
	var b graph.Builder
	b.AddFile(f)
	return b.Build()
}

func openGeo(path string) (*geo.DB, error) {
	if path == "" {
		return geo.OpenDefault()
	}
	return geo.Open(path, geo.OpenOptions{})
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

func runOrchestrator(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("orchestrator", flag.ContinueOnError)
	var bf busFlags
	bf.register(fs, "127.0.0.1:4222")
	graphPath := fs.String("graph", "", "location graph file with servers (default: the built-in world with the dev servers)")
	geoPath := fs.String("geoip", "", "MaxMind City database (default: the small built-in demo database)")
	httpAddr := fs.String("http", "127.0.0.1:8090", "HTTP listen address of the redirector and mesh API")
	id := fs.String("id", "", "instance id in the leadership lease (default host-pid)")
	trusted := fs.String("trusted-proxies", "", "comma-separated addresses/prefixes whose X-Forwarded-For is believed")
	tokenSecret := fs.String("token-secret", "", "key that signs sticky tokens; share it between redirectors (default random)")
	threshold := fs.Float64("threshold", 0, "demand bonus that opens a relay (default 50)")
	devIP := fs.Bool("dev-ip", false, "honour ?ip=ADDR on /play (development only)")
	overflow := fs.String("overflow-url", "", "external CDN URL prefix for HLS/DASH viewers when every server is full (e.g. https://cdn.example.net)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	var rf redirectorFlags // play tokens and HTTPS (secure_orchestrator.go)
	rf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, "text")
	if err != nil {
		return err
	}
	g, err := loadGraph(*graphPath)
	if err != nil {
		return err
	}
	db, err := openGeo(*geoPath)
	if err != nil {
		return err
	}
	tp, err := redirector.ParseTrusted(*trusted)
	if err != nil {
		return fmt.Errorf("--trusted-proxies: %w", err)
	}
	conn, cleanup, err := bf.connect("relaymesh-orchestrator", log)
	if err != nil {
		return err
	}
	defer cleanup()
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		return err
	}
	cp := controlPlane{graph: g, geo: db, conn: conn, ln: ln, id: *id, trusted: tp,
		tokenKey: []byte(*tokenSecret), threshold: *threshold, devIP: *devIP, overflowURL: *overflow, log: log}
	if err := rf.apply(&cp); err != nil {
		ln.Close()
		return err
	}
	return runControlPlane(ctx, cp)
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
	overflowURL string
	log         *slog.Logger
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
		TrustedProxies: cp.trusted, DevIP: cp.devIP, Bonus: bonusAdapter(o), OverflowURL: cp.overflowURL, PlayToken: cp.playToken}, cp.conn, cp.log)
	if err != nil {
		return err
	}
	d, err := dashboard.New(dashboard.Config{Graph: cp.graph, Mesh: r.View, Decisions: o.Decisions, Leader: o.Leader}, cp.log)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	r.Mount(mux)
	d.Mount(mux)
	// Prometheus: decisions, commands, lease changes, redirects.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		o.Collector(), r.Collector())
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	var wg sync.WaitGroup
	runs := []func() error{
		func() error { return o.Run(ctx) },
		func() error { return r.Run(ctx) },
		func() error { return d.Run(ctx) },
		func() error { return serveHTTP(ctx, cp.ln, mux) },
	}
	if cp.httpsLn != nil {
		runs = append(runs, func() error { return serveHTTP(ctx, cp.httpsLn, mux) })
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
