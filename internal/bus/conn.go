package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options say how to reach NATS. With InProcess set the URLs are ignored.
type Options struct {
	// URLs of an external cluster, e.g. "nats://a:4222,nats://b:4222".
	URLs string
	// InProcess connects to an embedded server without a socket.
	InProcess *server.Server
	// Name identifies the client to the server (monitoring).
	Name string
	// CredsFile is a NATS credentials file (JWT + NKey seed).
	CredsFile string
	// NKeyFile is an NKey seed file.
	NKeyFile string
	// TLS: CA bundle to verify the servers, and a client certificate.
	CAFile, CertFile, KeyFile string
	// ReconnectWait between attempts. Default 1 s (with jitter).
	ReconnectWait time.Duration
	// PingInterval between the client's pings to its server; two left
	// unanswered (a server cut off behind a network that holds the TCP
	// connection open) and the client moves to another server. Default
	// DefaultPingInterval.
	PingInterval time.Duration
}

// DefaultPingInterval: a connection whose server stopped answering is
// given up after two to three intervals (4–6 s), well within the lease's
// TTL, so that a leader connected to a server cut off from the cluster
// renews its lease through another in time. (nats.go's default is two
// minutes.) The cost is one small PING a connection every two seconds.
const DefaultPingInterval = 2 * time.Second

// Conn is a NATS connection with its JetStream context. It reconnects
// forever: while NATS is away, calls fail fast or time out, never panic.
type Conn struct {
	NC  *nats.Conn
	JS  jetstream.JetStream
	log *slog.Logger

	raised   sync.Map     // bucket → replicas checked (replicas.go)
	refusals atomic.Int32 // creations refused for want of peers (kv.go)
}

// Connect dials NATS. The first connection attempt is retried in the
// background too, so Connect succeeds even when NATS is down at start-up.
func Connect(o Options, log *slog.Logger) (*Conn, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.ReconnectWait <= 0 {
		o.ReconnectWait = time.Second
	}
	if o.PingInterval <= 0 {
		o.PingInterval = DefaultPingInterval
	}
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(o.ReconnectWait),
		nats.ReconnectJitter(o.ReconnectWait/4, o.ReconnectWait/2),
		nats.ReconnectBufSize(1 << 20),
		nats.Timeout(5 * time.Second),
		nats.PingInterval(o.PingInterval),
		nats.MaxPingsOutstanding(2),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted()) }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			log.Warn("NATS error", "subject", subj, "err", err)
		}),
	}
	url := o.URLs
	if o.InProcess != nil {
		opts = append(opts, nats.InProcessServer(o.InProcess))
		url = o.InProcess.ClientURL()
	} else if strings.TrimSpace(url) == "" {
		return nil, errors.New("bus: no NATS URL")
	}
	if o.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	}
	if o.NKeyFile != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("bus: nkey: %w", err)
		}
		opts = append(opts, opt)
	}
	if o.CAFile != "" {
		opts = append(opts, nats.RootCAs(o.CAFile))
	}
	if o.CertFile != "" || o.KeyFile != "" {
		opts = append(opts, nats.ClientCert(o.CertFile, o.KeyFile))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("bus: connect: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	return &Conn{NC: nc, JS: js, log: log}, nil
}

// Close drains nothing and closes the connection.
func (c *Conn) Close() { c.NC.Close() }

// Request sends a Command to relay id and waits for its Reply (bounded by ctx).
func (c *Conn) Request(ctx context.Context, id string, cmd Command) (Reply, error) {
	subj, err := CommandSubject(id)
	if err != nil {
		return Reply{}, err
	}
	data, err := Encode(cmd)
	if err != nil {
		return Reply{}, err
	}
	msg, err := c.NC.RequestWithContext(ctx, subj, data)
	if err != nil {
		return Reply{}, fmt.Errorf("bus: %s to %s: %w", cmd.Op, id, err)
	}
	rep, err := DecodeReply(msg.Data)
	if err != nil {
		return Reply{}, err
	}
	if !rep.OK {
		return rep, fmt.Errorf("bus: %s to %s refused: %s", cmd.Op, id, rep.Error)
	}
	return rep, nil
}
