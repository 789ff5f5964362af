package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/relaymesh/relaymesh/ingest"
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/relay/agent"
)

// startAgent runs the agent in the background when nats.urls is set and
// returns its bus connection, which the caller closes last (after persistent
// shared objects are saved). The data plane never waits for it: connecting
// retries forever and a missing bus only means no status reports.
func startAgent(ctx context.Context, cfg config.Config, n *node, id, location string, puller agent.Puller, log *slog.Logger) (*bus.Conn, error) {
	nc := cfg.NATS
	if nc.URLs == "" {
		return nil, nil
	}
	rtmpAddr, httpAddr := cfg.Advertise.RTMP, cfg.Advertise.HTTP
	if rtmpAddr == "" {
		rtmpAddr = n.rtmpLn.Addr().String()
	}
	if httpAddr == "" {
		httpAddr = n.httpLn.Addr().String()
	}
	rtmpsAddr, httpsAddr := cfg.Advertise.RTMPS, cfg.Advertise.HTTPS
	if rtmpsAddr == "" && n.sec.rtmpsLn != nil {
		rtmpsAddr = n.sec.rtmpsLn.Addr().String()
	}
	if httpsAddr == "" && n.sec.httpsLn != nil {
		httpsAddr = n.sec.httpsLn.Addr().String()
	}
	conn, err := bus.Connect(bus.Options{URLs: nc.URLs, Name: id, CredsFile: nc.Creds, NKeyFile: nc.NKey,
		CAFile: nc.CA, CertFile: nc.Cert, KeyFile: nc.Key}, log)
	if err != nil {
		return nil, err
	}
	ag, err := agent.New(agent.Config{ID: id, Location: location, RTMP: rtmpAddr, HTTP: httpAddr, RTMPS: rtmpsAddr, HTTPS: httpsAddr,
		CapacityViewers: cfg.Capacity.Viewers, CapacityMbps: cfg.Capacity.Mbps}, conn, n.stats(), heldPackaging(cfg, n, puller), log)
	if err != nil {
		conn.Close()
		return nil, err
	}
	go func() {
		if err := ag.Run(ctx); err != nil {
			log.Warn("agent stopped", "err", err)
		}
	}()
	log.Info("reporting to the control plane", "nats", nc.URLs, "id", id)
	return conn, nil
}

// announceStreams publishes the primary's stream start and stop events on
// the bus (relaymesh.v1.stream.<app>.<name>.event), never blocking ingest.
func announceStreams(ctx context.Context, conn *bus.Conn, in *ingest.Ingest, log *slog.Logger) {
	pub := bus.NewPublisher(conn.NC, 0)
	go pub.Run(ctx)
	send := func(app, name, event string) {
		subj, err := bus.StreamEventSubject(app, name)
		if err != nil {
			return // a name the bus cannot carry as a subject token
		}
		data, err := bus.Encode(bus.StreamEvent{App: app, Name: name, Event: event, Time: time.Now()})
		if err == nil && !pub.Publish(subj, data) {
			log.Debug("stream event dropped (bus queue full)", "stream", app+"/"+name)
		}
	}
	in.OnPublish = func(app, name, _ string) { send(app, name, bus.EventPublish) }
	in.OnUnpublish = func(app, name string) { send(app, name, bus.EventUnpublish) }
}

// packagedPuller makes a relay package the streams the orchestrator opens
// on it from the moment it pulls them (hls.package_held): its first HTTP
// viewers find segments, and steering ranks it warm. A stream released is
// first let go by the packager, so that its ended playlists do not pull it
// again.
type packagedPuller struct {
	agent.Puller
	n *node
}

// heldPackaging wraps puller when cfg packages held streams.
func heldPackaging(cfg config.Config, n *node, puller agent.Puller) agent.Puller {
	if !cfg.HLS.PackageHeld || puller == nil {
		return puller
	}
	return packagedPuller{Puller: puller, n: n}
}

func (p packagedPuller) Hold(ctx context.Context, app, name, parent string) error {
	if err := p.Puller.Hold(ctx, app, name, parent); err != nil {
		return err
	}
	if pkg := p.n.pkgRef.Load(); pkg != nil { // nil before the node runs: packaged on request then
		pkg.Hold(app, name)
	}
	return nil
}

func (p packagedPuller) Release(app, name string) {
	if pkg := p.n.pkgRef.Load(); pkg != nil {
		pkg.Release(app, name)
	}
	p.Puller.Release(app, name)
}
