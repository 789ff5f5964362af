package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/relaymesh/relaymesh/ingest"
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/relay"
	"github.com/relaymesh/relaymesh/relay/agent"
	"github.com/relaymesh/relaymesh/topology/graph"
)

func init() {
	register(command{name: "dev", summary: "run a whole mesh on loopback: NATS, primary, orchestrator with redirector, four relays", run: runDev})
}

func runDev(ctx context.Context, args []string) error { return devMain(ctx, args, nil) }

// devMain runs the development mesh until ctx ends; ready, when set, gets
// the redirector's address once everything listens.
func devMain(ctx context.Context, args []string, ready func(httpAddr string)) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	httpAddr := fs.String("http", "127.0.0.1:8080", "HTTP address of the redirector and mesh API")
	graphPath := fs.String("graph", "", "location graph file with servers (default: the built-in world with a primary and relays at eu, na, as, sa)")
	geoPath := fs.String("geoip", "", "MaxMind City database (default: the built-in demo database)")
	threshold := fs.Float64("threshold", 1, "demand bonus that opens a relay (low, so a few viewers open one)")
	demo := fs.Bool("demo-source", false, "publish a test pattern to live/demo with ffmpeg (when installed)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
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
	if g.Primary() < 0 {
		return errors.New("the graph has no primary server")
	}
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
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
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

	// The redirector's address first: every server's playlists name it for
	// content steering.
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		return err
	}
	defer ln.Close()
	steerURL := "http://" + ln.Addr().String()

	// Primary, open for publishing, with an agent so its real address is known.
	ps := g.Servers()[g.Primary()]
	pn, err := devNode(ps, log.With("role", "primary"))
	if err != nil {
		return err
	}
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
	sos, stopSO, err := (&soFlags{data: filepath.Join(dir, "so")}).primary(pn, pn.log, soConn)
	if err != nil {
		return err
	}
	defer stopSO()
	ph := relay.NewHandler(relay.Options{Hubs: pn.hubs, Publish: in.Publish, Messages: sos.Message, Grace: pn.cfg.RTMP.Grace, Log: pn.log})
	primaryRTMP := pn.rtmpLn.Addr().String()
	if err := devAgent(ctx, spawn, connect, ps, pn, nil); err != nil {
		return err
	}
	spawn("primary", func() error { return pn.run(ctx, sos.Wrap(ph)) })
	// Relays pulling from the primary until told otherwise.
	for _, s := range g.Servers() {
		if s.Role == graph.RolePrimary {
			continue
		}
		n, err := devNode(s, log.With("role", "relay", "relay", s.ID))
		if err != nil {
			return err
		}
		n.cfg.Relay.Upstream = "rtmp://" + primaryRTMP
		n.cfg.HLS.SteeringURL = steerURL
		up, err := relay.NewUpstream(ctx, relay.UpstreamConfig{URL: n.cfg.Relay.Upstream, RelayID: s.ID, Conn: connConfig(n.cfg.RTMP)}, n.hubs, n.log)
		if err != nil {
			return err
		}
		n.src = pullingSource(n.hubs, up)
		sor, err := soRelay(ctx, n.cfg, connConfig(n.cfg.RTMP), n.log)
		if err != nil {
			return err
		}
		h := relay.NewHandler(relay.Options{Hubs: n.hubs, Upstream: up, Messages: sor.Message, Grace: n.cfg.RTMP.Grace, Log: n.log})
		if err := devAgent(ctx, spawn, connect, s, n, up); err != nil {
			return err
		}
		spawn(s.ID, func() error { return n.run(ctx, sor.Wrap(h)) })
	}

	// Orchestrator and redirector.
	conn, err := connect("orchestrator")
	if err != nil {
		return err
	}
	defer conn.Close()
	spawn("orchestrator", func() error {
		return runControlPlane(ctx, controlPlane{graph: g, geo: db, conn: conn, ln: ln, id: "dev",
			threshold: *threshold, devIP: true, log: log})
	})
	web := "http://" + ln.Addr().String()
	fmt.Fprintf(os.Stderr, "\nrelaymesh dev is running\n"+
		"  publish:  ffmpeg -re -i INPUT -c copy -f flv rtmp://%s/live/NAME\n"+
		"  watch:    %s/play/live/NAME?proto=rtmp|hls|dash   (add &ip=203.0.113.5 to be a viewer in Tokyo; see geo/README.md)\n"+
		"  mesh:     %s/api/v1/mesh\n"+
		"  dashboard: %s/\n\n", primaryRTMP, web, web, web)
	if *demo {
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

// devNode starts the listeners of one server on free loopback ports.
func devNode(s graph.Server, log *slog.Logger) (*node, error) {
	cfg := config.Default()
	cfg.RTMP.Listen, cfg.HTTP.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Relay.ID, cfg.Relay.Location = s.ID, s.Location
	return newNode(cfg, log)
}

// devAgent connects a server to the bus.
func devAgent(ctx context.Context, spawn func(string, func() error), connect func(string) (*bus.Conn, error),
	s graph.Server, n *node, p agent.Puller) error {
	conn, err := connect(s.ID)
	if err != nil {
		return err
	}
	a, err := agent.New(agent.Config{ID: s.ID, Location: s.Location, RTMP: n.rtmpLn.Addr().String(), HTTP: n.httpLn.Addr().String(),
		CapacityViewers: s.CapacityViewers, CapacityMbps: s.CapacityMbps}, conn, n.stats(), p, n.log)
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
