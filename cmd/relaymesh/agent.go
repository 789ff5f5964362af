package main

import (
	"context"
	"flag"
	"log/slog"
	"time"

	"github.com/relaymesh/relaymesh/ingest"
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/relay/agent"
)

// agentFlags join a standalone primary or relay to the mesh's NATS bus.
type agentFlags struct {
	urls, creds, nkey, ca, cert, key string
	advRTMP, advHTTP                 string
	advRTMPS, advHTTPS               string
	capViewers                       int
	capMbps                          float64
}

func (a *agentFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.urls, "nats", "", "NATS cluster URLs (nats://host:4222,…): report status to the orchestrator and obey its commands; empty: no control plane")
	fs.StringVar(&a.creds, "nats-creds", "", "NATS credentials file")
	fs.StringVar(&a.nkey, "nats-nkey", "", "NATS NKey seed file")
	fs.StringVar(&a.ca, "nats-ca", "", "CA bundle that signs the NATS servers' certificates")
	fs.StringVar(&a.cert, "nats-cert", "", "client certificate for NATS (with --nats-key)")
	fs.StringVar(&a.key, "nats-key", "", "client key for NATS")
	fs.StringVar(&a.advRTMP, "advertise-rtmp", "", "host:port viewers reach the RTMP listener at (default: the listen address)")
	fs.StringVar(&a.advHTTP, "advertise-http", "", "host:port viewers reach the HTTP listener at (default: the listen address)")
	fs.StringVar(&a.advRTMPS, "advertise-rtmps", "", "host:port viewers reach the RTMPS listener at (default: the --rtmps address)")
	fs.StringVar(&a.advHTTPS, "advertise-https", "", "host:port viewers reach the HTTPS listener at (default: the --https address)")
	fs.IntVar(&a.capViewers, "capacity-viewers", 0, "viewers this server takes before the orchestrator looks elsewhere (0: unlimited)")
	fs.Float64Var(&a.capMbps, "capacity-mbps", 0, "Mbit/s this server sends before the orchestrator looks elsewhere (0: unlimited)")
}

// start runs the agent in the background when --nats was given and returns
// its bus connection, which the caller closes last (after persistent shared
// objects are saved). The data plane never waits for it: connecting retries
// forever and a missing bus only means no status reports.
func (a *agentFlags) start(ctx context.Context, n *node, id, location string, puller agent.Puller, log *slog.Logger) (*bus.Conn, error) {
	if a.urls == "" {
		return nil, nil
	}
	rtmpAddr, httpAddr := a.advRTMP, a.advHTTP
	if rtmpAddr == "" {
		rtmpAddr = n.rtmpLn.Addr().String()
	}
	if httpAddr == "" {
		httpAddr = n.httpLn.Addr().String()
	}
	rtmpsAddr, httpsAddr := a.advRTMPS, a.advHTTPS
	if rtmpsAddr == "" && n.sec.rtmpsLn != nil {
		rtmpsAddr = n.sec.rtmpsLn.Addr().String()
	}
	if httpsAddr == "" && n.sec.httpsLn != nil {
		httpsAddr = n.sec.httpsLn.Addr().String()
	}
	conn, err := bus.Connect(bus.Options{URLs: a.urls, Name: id, CredsFile: a.creds, NKeyFile: a.nkey,
		CAFile: a.ca, CertFile: a.cert, KeyFile: a.key}, log)
	if err != nil {
		return nil, err
	}
	ag, err := agent.New(agent.Config{ID: id, Location: location, RTMP: rtmpAddr, HTTP: httpAddr, RTMPS: rtmpsAddr, HTTPS: httpsAddr,
		CapacityViewers: a.capViewers, CapacityMbps: a.capMbps}, conn, agent.HubStats(n.hubs), puller, log)
	if err != nil {
		conn.Close()
		return nil, err
	}
	go func() {
		if err := ag.Run(ctx); err != nil {
			log.Warn("agent stopped", "err", err)
		}
	}()
	log.Info("reporting to the control plane", "nats", a.urls, "id", id)
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
