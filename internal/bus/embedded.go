package bus

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedConfig configures an in-process NATS server with JetStream.
type EmbeddedConfig struct {
	// StoreDir holds JetStream data (required: the key-value buckets live there).
	StoreDir string
	// Listen is host:port for other processes to connect to; empty means no
	// listener at all (clients in this process connect in-process).
	// Port 0 picks a free port.
	Listen string
	// ReadyTimeout bounds start-up. Default 10 s.
	ReadyTimeout time.Duration
}

// Embedded is a running in-process NATS server.
type Embedded struct {
	srv *server.Server
}

// StartEmbedded starts a NATS server inside this process with JetStream on.
// Stop it with Shutdown.
func StartEmbedded(cfg EmbeddedConfig, log *slog.Logger) (*Embedded, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("bus: embedded server needs a store directory")
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 10 * time.Second
	}
	opts := &server.Options{
		ServerName:             "relaymesh-embedded",
		JetStream:              true,
		StoreDir:               cfg.StoreDir,
		NoSigs:                 true,
		NoLog:                  true,
		DisableJetStreamBanner: true,
		JetStreamMaxMemory:     64 << 20,
		JetStreamMaxStore:      1 << 30,
	}
	if cfg.Listen == "" {
		opts.DontListen = true
	} else {
		host, port, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("bus: listen address %q: %w", cfg.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("bus: listen port %q", port)
		}
		opts.Host, opts.Port = host, p
		if p == 0 {
			opts.Port = server.RANDOM_PORT
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("bus: embedded server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(cfg.ReadyTimeout) {
		srv.Shutdown()
		return nil, errors.New("bus: embedded server did not become ready")
	}
	// Its clients see each other's disconnects at once (disconnect.go).
	if err := ImportDisconnects(srv); err != nil {
		srv.Shutdown()
		return nil, err
	}
	if log != nil {
		log.Info("embedded NATS server ready", "url", srv.ClientURL(), "store", cfg.StoreDir, "listening", cfg.Listen != "")
	}
	return &Embedded{srv: srv}, nil
}

// ClientURL is the URL other processes use (meaningful when listening).
func (e *Embedded) ClientURL() string { return e.srv.ClientURL() }

// Server is the underlying server, for in-process connections
// (Options.InProcess).
func (e *Embedded) Server() *server.Server { return e.srv }

// Shutdown stops the server and waits for it.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}
