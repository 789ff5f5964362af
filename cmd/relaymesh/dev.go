package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/relaymesh/relaymesh/ingest"
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/internal/serve"
	"github.com/relaymesh/relaymesh/relay/agent"
	"github.com/relaymesh/relaymesh/relay/pull"
	"github.com/relaymesh/relaymesh/topology/graph"
)

func init() {
	register(command{name: "dev", summary: "run a whole mesh on loopback: NATS, primary, orchestrator with redirector, four relays", run: runDev})
}

func runDev(ctx context.Context, args []string) error { return devMain(ctx, args, os.Stderr, nil) }

// devFlags are relaymesh dev's flags over its defaults: fixed ports, so a
// publisher (OBS) set up once keeps working.
func devFlags(cfg *config.Config) *cmdFlags {
	cfg.RTMP.Listen, cfg.HTTP.Listen = "127.0.0.1:1935", "127.0.0.1:8080"
	cfg.Orchestrator.Threshold = 1 // low, so a few viewers open a relay
	c := newCmdFlags("dev", cfg)
	c.String(&cfg.RTMP.Listen, "rtmp", "rtmp.listen", "RTMP address of the primary: publishers push here")
	c.String(&cfg.HTTP.Listen, "http", "http.listen", "HTTP address of the redirector, mesh API and dashboard")
	c.String(&cfg.Dev.PrimaryHTTP, "primary-http", "dev.primary_http", "HTTP address of the primary (/hls/, /dash/, /metrics)")
	c.Int(&cfg.Dev.RelayBasePort, "relay-base-port", "dev.relay_base_port", "relay i listens RTMP on base+2i and HTTP on base+2i+1, on the host of --rtmp; 0: free ports")
	bindControlPlane(c)
	c.Bool(&cfg.Dev.DemoSource, "demo-source", "dev.demo_source", "publish a test pattern to live/demo with ffmpeg (when installed)")
	// Play authorization on every server, tokens in the redirector's
	// redirects (secure.go, secure_orchestrator.go).
	p := &cfg.Play
	c.List(&p.Protect, "play-protect", "play.protect", "comma-separated applications whose viewers need a play key or token (* = all; default: none)")
	c.Map(&p.Keys, "play-key", "play.keys", "APP=KEY, APP/NAME=KEY or *=KEY", "APP=KEY or APP/NAME=KEY or *=KEY: viewers of a protected app use ?key=KEY")
	c.String(&p.TokenSecret, "play-token-secret", "play.token_secret", "secret of the play tokens the redirector's redirects carry and every server checks (default: none)")
	bindLog(c)
	return c
}

// devListener is one address of the dev mesh, listened on before anything
// starts so that a port in use is reported at once.
type devListener struct {
	name, what string // the server (primary, eu, …) and its listener (RTMP, HTTP)
	key, flag  string // what sets the address
	addr       string
	ln         net.Listener
}

// devListeners opens every listener of the mesh: the primary's, each
// relay's in graph order, the redirector's. On an error none stays open.
func devListeners(cfg config.Config, g *graph.Graph) ([]*devListener, error) {
	host, _, err := net.SplitHostPort(cfg.RTMP.Listen)
	if err != nil {
		return nil, err
	}
	ls := []*devListener{
		{name: "primary", what: "RTMP", key: "rtmp.listen", flag: "rtmp", addr: cfg.RTMP.Listen},
		{name: "primary", what: "HTTP", key: "dev.primary_http", flag: "primary-http", addr: cfg.Dev.PrimaryHTTP},
	}
	i := 0
	for _, s := range g.Servers() {
		if s.Role == graph.RolePrimary {
			continue
		}
		for k, what := range []string{"RTMP", "HTTP"} {
			port := 0
			if cfg.Dev.RelayBasePort > 0 {
				port = cfg.Dev.RelayBasePort + 2*i + k
			}
			ls = append(ls, &devListener{name: s.ID, what: what, key: "dev.relay_base_port", flag: "relay-base-port",
				addr: net.JoinHostPort(host, strconv.Itoa(port))})
		}
		i++
	}
	ls = append(ls, &devListener{name: "redirector", what: "HTTP", key: "http.listen", flag: "http", addr: cfg.HTTP.Listen})
	for _, l := range ls {
		if l.ln, err = net.Listen("tcp", l.addr); err != nil {
			for _, o := range ls {
				if o.ln != nil {
					o.ln.Close()
				}
			}
			hint := ""
			if errors.Is(err, syscall.EADDRINUSE) {
				hint = " (is another relaymesh running?)"
			}
			return nil, fmt.Errorf("%s %s listener %s: %w%s; choose another address with --%s or %s in the config file",
				l.name, l.what, l.addr, unwrapOp(err), hint, l.flag, l.key)
		}
	}
	return ls, nil
}

// unwrapOp drops the "listen tcp ADDR:" prefix the caller already gives.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// devAddrs is what the banner shows.
type devAddrs struct {
	primaryRTMP, primaryHTTP, web string
	relays                        []devServer
}

type devServer struct{ id, rtmp, http string }

// devBanner prints every address of the mesh. URLs with a query string are
// quoted, so they can be pasted into a shell as they are.
func devBanner(w io.Writer, a devAddrs) {
	play := "http://" + a.web + "/play/live/NAME"
	fmt.Fprintf(w, "\nrelaymesh dev is running\n"+
		"  publish:    ffmpeg -re -i INPUT -c copy -f flv rtmp://%s/live/NAME\n"+
		"  watch:      '%s?proto=hls'   (or proto=dash)\n"+
		"  over RTMP:  curl -so /dev/null -w '%%{redirect_url}\\n' '%s?proto=rtmp'   (prints the rtmp:// URL to play: players do not follow an HTTP redirect to it)\n"+
		"  from Tokyo: '%s?proto=hls&ip=203.0.113.5'   (see geo/README.md)\n"+
		"  dashboard:  http://%s/\n"+
		"  mesh API:   http://%s/api/v1/mesh\n"+
		"  servers:\n"+
		"    %-10s rtmp://%-21s http://%s\n", a.primaryRTMP, play, play, play, a.web, a.web, "primary", a.primaryRTMP, a.primaryHTTP)
	for _, r := range a.relays {
		fmt.Fprintf(w, "    %-10s rtmp://%-21s http://%s\n", r.id, r.rtmp, r.http)
	}
	fmt.Fprintln(w)
}

// devMain runs the development mesh until ctx ends, printing its banner to
// out; ready, when set, gets the redirector's address once everything listens.
func devMain(ctx context.Context, args []string, out io.Writer, ready func(httpAddr string)) error {
	cfg := config.Default()
	log, err := devFlags(&cfg).parse(args)
	if err != nil {
		return err
	}
	g, err := loadGraph(cfg.Orchestrator.Graph)
	if err != nil {
		return err
	}
	db, err := openGeo(cfg.Orchestrator.GeoIP)
	if err != nil {
		return err
	}
	if g.Primary() < 0 {
		return errors.New("the graph has no primary server")
	}
	if err := checkSecure(cfg); err != nil {
		return err
	}
	lns, err := devListeners(cfg, g)
	if err != nil {
		return err
	}
	defer func() { // after every server stopped (a second Close is harmless)
		for _, l := range lns {
			l.ln.Close()
		}
	}()
	free := lns // handed to the servers in this order
	dir, err := os.MkdirTemp("", "relaymesh-dev-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	nats, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: filepath.Join(dir, "jetstream")}, log)
	if err != nil {
		return err
	}
	defer nats.Shutdown()
	connect := func(name string) (*bus.Conn, error) {
		return bus.Connect(bus.Options{InProcess: nats.Server(), Name: name}, log)
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// On every return, servers are told to stop before they are waited for.
	defer wg.Wait()
	defer cancel()
	errCh := make(chan error, 16)
	spawn := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && ctx.Err() == nil {
				errCh <- fmt.Errorf("%s: %w", name, err)
				cancel()
			}
		}()
	}

	// Every server's playlists name the redirector (the last listener) for
	// content steering.
	steerURL := "http://" + lns[len(lns)-1].ln.Addr().String()

	// Primary, open for publishing, with an agent so its real address is known.
	ps := g.Servers()[g.Primary()]
	pn := devNode(cfg, ps, log.With("role", "primary"), free[0].ln, free[1].ln)
	free = free[2:]
	pn.cfg.HLS.SteeringURL = steerURL
	in := ingest.New(ingest.Config{Auth: ingest.Auth{Open: true}}, pn.hubs, pn.log)
	// Shared objects and RPC, persistent objects in the bus's bucket, as a
	// primary with --nats keeps them.
	soConn, err := connect("primary-so")
	if err != nil {
		return err
	}
	defer soConn.Close()
	// Stream starts and ends, for the orchestrator (it closes the relays of
	// a stream that ended).
	announceStreams(ctx, soConn, in, pn.log)
	pn.cfg.SharedObjects.Data = filepath.Join(dir, "so")
	sos, stopSO, err := soPrimary(pn, pn.log, soConn)
	if err != nil {
		return err
	}
	defer stopSO()
	ph := serve.NewHandler(serve.Options{Hubs: pn.hubs, Publish: in.Publish, Sessions: sos, Grace: pn.cfg.RTMP.Grace, Log: pn.log})
	primaryRTMP := pn.rtmpLn.Addr().String()
	if err := devAgent(ctx, spawn, connect, ps, pn, nil); err != nil {
		return err
	}
	spawn("primary", func() error { return pn.run(ctx, ph) })
	addrs := devAddrs{primaryRTMP: primaryRTMP, primaryHTTP: pn.httpLn.Addr().String()}
	// Relays pulling from the primary until told otherwise.
	for _, s := range g.Servers() {
		if s.Role == graph.RolePrimary {
			continue
		}
		n := devNode(cfg, s, log.With("role", "relay", "relay", s.ID), free[0].ln, free[1].ln)
		free = free[2:]
		addrs.relays = append(addrs.relays, devServer{s.ID, n.rtmpLn.Addr().String(), n.httpLn.Addr().String()})
		n.cfg.Relay.Upstream = "rtmp://" + primaryRTMP
		n.cfg.HLS.SteeringURL = steerURL
		up, err := pull.New(ctx, pull.Config{URL: n.cfg.Relay.Upstream, RelayID: s.ID, Conn: connConfig(n.cfg.RTMP),
			Credentials: n.upstreamCredentials()}, n.hubs, n.log)
		if err != nil {
			return err
		}
		n.watchUpstream(up)
		n.src = pullingSource(n.hubs, up)
		sor, err := soRelay(ctx, n.cfg, connConfig(n.cfg.RTMP), n.log)
		if err != nil {
			return err
		}
		h := serve.NewHandler(serve.Options{Hubs: n.hubs, Upstream: up, Sessions: sor, Grace: n.cfg.RTMP.Grace, Log: n.log})
		if err := devAgent(ctx, spawn, connect, s, n, up); err != nil {
			return err
		}
		spawn(s.ID, func() error { return n.run(ctx, h) })
	}

	// Orchestrator and redirector.
	conn, err := connect("orchestrator")
	if err != nil {
		return err
	}
	defer conn.Close()
	ln := free[0].ln
	spawn("orchestrator", func() error {
		return runControlPlane(ctx, controlPlane{graph: g, geo: db, conn: conn, ln: ln, id: "dev",
			threshold: cfg.Orchestrator.Threshold, devIP: true, log: log,
			playToken: playTokenSigner(cfg.Play.TokenSecret, cfg.Orchestrator.PlayTokenTTL, cfg.Orchestrator.PlayTokenStep)})
	})
	addrs.web = ln.Addr().String()
	devBanner(out, addrs)
	if cfg.Dev.DemoSource {
		if path, err := exec.LookPath("ffmpeg"); err != nil {
			log.Warn("--demo-source: ffmpeg not found, no test pattern")
		} else {
			spawn("demo-source", func() error { return demoSource(ctx, path, "rtmp://"+primaryRTMP+"/live/demo", log) })
		}
	}
	if ready != nil {
		ready(ln.Addr().String())
	}
	var err2 error
	select {
	case <-ctx.Done():
	case err2 = <-errCh:
	}
	// Every server stops before the shared objects are saved (deferred).
	cancel()
	wg.Wait()
	return err2
}

// devNode is one server of the dev mesh on its listeners, with the
// configuration's rtmp, hub, hls and shared_objects sections.
func devNode(cfg config.Config, s graph.Server, log *slog.Logger, rtmpLn, httpLn net.Listener) *node {
	cfg.RTMP.Listen, cfg.HTTP.Listen = rtmpLn.Addr().String(), httpLn.Addr().String()
	cfg.Relay.ID, cfg.Relay.Location = s.ID, s.Location
	return newNodeOn(cfg, log, rtmpLn, httpLn)
}

// devAgent connects a server to the bus.
func devAgent(ctx context.Context, spawn func(string, func() error), connect func(string) (*bus.Conn, error),
	s graph.Server, n *node, p agent.Puller) error {
	conn, err := connect(s.ID)
	if err != nil {
		return err
	}
	a, err := agent.New(agent.Config{ID: s.ID, Location: s.Location, RTMP: n.rtmpLn.Addr().String(), HTTP: n.httpLn.Addr().String(),
		CapacityViewers: s.CapacityViewers, CapacityMbps: s.CapacityMbps}, conn, n.stats(), heldPackaging(n.cfg, n, p), n.log)
	if err != nil {
		conn.Close()
		return err
	}
	spawn(s.ID+" agent", func() error { defer conn.Close(); return a.Run(ctx) })
	return nil
}

// demoSource publishes a test pattern until ctx ends.
func demoSource(ctx context.Context, ffmpeg, url string, log *slog.Logger) error {
	cmd := exec.CommandContext(ctx, ffmpeg, "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25", "-f", "lavfi", "-i", "sine=frequency=440",
		"-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-pix_fmt", "yuv420p", "-g", "50",
		"-c:a", "aac", "-f", "flv", url)
	log.Info("demo source publishing", "url", url)
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil
	}
	return err
}
