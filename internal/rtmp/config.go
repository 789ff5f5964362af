package rtmp

import (
	"crypto/tls"
	"time"
)

// ConnConfig holds the timeouts and bounds of one connection.
type ConnConfig struct {
	HandshakeTimeout time.Duration // whole handshake (default 10s)
	ReadTimeout      time.Duration // longest silence from the peer (default 30s)
	WriteTimeout     time.Duration // longest a single writev may take (default 10s)
	MaxMessageSize   uint32        // largest message accepted (default 8 MiB)
	ControlQueue     int           // pending commands, shared-object and RPC messages (default 1024); overflow closes
	BatchBytes       int           // media bytes gathered into one writev at most (default 256 KiB)
	WindowAckSize    uint32        // acknowledgement window announced to the peer (default 2.5 MB)
	SendBuffer       int           // SO_SNDBUF for the socket; 0 keeps the kernel's auto-tuning
	// MaxInflight is how much media (by timestamps) may wait in the kernel's
	// socket buffer for a slow peer before the writer holds further frames
	// back in the hub, where the drop policy applies (default 500ms).
	MaxInflight time.Duration
	// WriteBatch gathers frames for up to this long before a write, so that
	// one writev carries several frames: fewer system calls and wake-ups per
	// viewer at the price of that much latency (default 0: write at once).
	WriteBatch time.Duration
	// MaxNotSent is how many bytes may wait in the kernel unsent (beyond
	// what is in flight on the network) before the writer holds media back
	// (default 16 KiB).
	MaxNotSent int
	// Flusher, when set, writes server connections in its rounds (every
	// Flusher.Interval, which then replaces WriteBatch) instead of with a
	// goroutine per connection.
	Flusher *Flusher
	// Metrics, when set, counts what ends or refuses the server's
	// connections (see Metrics).
	Metrics *Metrics
	// Sessions, when set, holds the server's open sessions (to tell them
	// the server is going away, see Session.Leave).
	Sessions *Sessions

	// ConnectProps are extra properties a client sends in its connect
	// command object (a relay marks itself so upstreams treat it as one).
	ConnectProps map[string]any
	// TLS configures the client side of rtmps:// connections (nil: the
	// system's roots, server name from the URL).
	TLS *tls.Config
}

// WithDefaults fills zero fields.
func (c ConnConfig) WithDefaults() ConnConfig {
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = 30 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = DefaultMaxMessageSize
	}
	if c.ControlQueue <= 0 {
		c.ControlQueue = 1024
	}
	if c.BatchBytes <= 0 {
		c.BatchBytes = 256 << 10
	}
	if c.MaxNotSent <= 0 {
		c.MaxNotSent = 16 << 10
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = 500 * time.Millisecond
	}
	if c.WindowAckSize == 0 {
		c.WindowAckSize = 2500000
	}
	return c
}
