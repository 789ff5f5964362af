package rtmp

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts what ends or refuses the connections of a server: every
// close of a playing stream by reason, handshake failures, timeouts and
// refused commands. One Metrics serves one server (ConnConfig.Metrics); a
// nil *Metrics counts nothing.
type Metrics struct {
	viewersClosed *prometheus.CounterVec
	handshake     *prometheus.CounterVec
	timeouts      *prometheus.CounterVec
	requests      *prometheus.CounterVec
	connRefused   *prometheus.CounterVec
	writeLatency  *prometheus.HistogramVec // see latency.go
	keepingUp     prometheus.Observer
	behind        prometheus.Observer
}

// Close reasons of a viewer (a playing stream: a player or a downstream
// relay's pull), the reason label of relaymesh_rtmp_viewers_closed_total.
const (
	ReasonEOF            = "eof"                // the peer closed or reset the connection
	ReasonStopped        = "stopped"            // the peer stopped the stream (deleteStream, closeStream, a new play on it)
	ReasonWriteTimeout   = "write_timeout"      // the socket took nothing for WriteTimeout
	ReasonWriteError     = "write_error"        // another write error
	ReasonTooSlow        = "too_slow"           // the hub's drop policy gave up on the viewer
	ReasonOverflow       = "overflow"           // a lossless subscriber (downstream relay) fell too far behind
	ReasonStreamEnded    = "stream_ended"       // the broadcaster did not come back within the grace period
	ReasonControlQueue   = "control_queue_full" // the peer let commands pile up
	ReasonIdleTimeout    = "idle_timeout"       // the peer was silent for the idle timeout
	ReasonProtocol       = "protocol_error"     // the peer broke the protocol
	ReasonDrain          = "drain"              // the server drained and closed what was left
	ReasonShutdown       = "shutdown"           // the server stopped without a drain
	ReasonClosed         = "closed"             // closed by the server for another reason
	ReasonOther          = "error"              // any other read error
	handshakeNotRTMP     = "not_rtmp"
	handshakeTimeout     = "timeout"
	handshakeEOF         = "eof"
	handshakeInvalid     = "invalid"
	timeoutHandshake     = "handshake"
	timeoutIdle          = "idle"
	timeoutWrite         = "write"
	refusedConnectionCap = "limit"
)

// NewMetrics returns the counters of one server, every known label value
// present at zero.
func NewMetrics() *Metrics {
	m := &Metrics{
		viewersClosed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "relaymesh_rtmp_viewers_closed_total",
			Help: "Playing streams (players and downstream relays) that ended, by reason."}, []string{"reason"}),
		handshake: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "relaymesh_rtmp_handshake_failures_total",
			Help: "Connections whose RTMP handshake failed, by reason."}, []string{"reason"}),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "relaymesh_rtmp_timeouts_total",
			Help: "Connections closed by a timeout, by kind (handshake, idle, write)."}, []string{"kind"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "relaymesh_rtmp_requests_total",
			Help: "RTMP connects, publishes and plays by outcome: accepted, or the status code that refused them."}, []string{"op", "result"}),
		connRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "relaymesh_rtmp_connections_refused_total",
			Help: "Connections refused before the handshake, by reason."}, []string{"reason"}),
		writeLatency: newWriteLatency(),
	}
	m.keepingUp = m.writeLatency.WithLabelValues(latencyKeepingUp)
	m.behind = m.writeLatency.WithLabelValues(latencyBehind)
	for _, r := range []string{ReasonEOF, ReasonStopped, ReasonWriteTimeout, ReasonWriteError, ReasonTooSlow, ReasonOverflow,
		ReasonStreamEnded, ReasonControlQueue, ReasonIdleTimeout, ReasonProtocol, ReasonDrain, ReasonShutdown, ReasonClosed, ReasonOther} {
		m.viewersClosed.WithLabelValues(r)
	}
	for _, r := range []string{handshakeNotRTMP, handshakeTimeout, handshakeEOF, handshakeInvalid} {
		m.handshake.WithLabelValues(r)
	}
	for _, k := range []string{timeoutHandshake, timeoutIdle, timeoutWrite} {
		m.timeouts.WithLabelValues(k)
	}
	for _, c := range [][2]string{{"connect", resultAccepted}, {"publish", resultAccepted}, {"play", resultAccepted},
		{"connect", CodeConnectRejected}, {"publish", CodePublishBadName}, {"publish", CodePublishUnauthorized},
		{"play", CodePlayStreamNotFound}, {"play", CodePlayFailed}} {
		m.requests.WithLabelValues(c[0], c[1])
	}
	m.connRefused.WithLabelValues(refusedConnectionCap)
	return m
}

// Register registers the counters on reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.viewersClosed, m.handshake, m.timeouts, m.requests, m.connRefused, m.writeLatency} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *Metrics) viewerClosed(reason string) {
	if m != nil {
		m.viewersClosed.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) handshakeFailed(err error) {
	if m == nil {
		return
	}
	reason := handshakeInvalid
	switch {
	case errors.Is(err, ErrNotRTMP):
		reason = handshakeNotRTMP
	case errors.Is(err, errHandshakeTimedOut):
		reason = handshakeTimeout
		m.timeouts.WithLabelValues(timeoutHandshake).Inc()
	case isEOF(err) || errors.Is(err, io.ErrUnexpectedEOF):
		reason = handshakeEOF // the peer left, in the middle or before
	}
	m.handshake.WithLabelValues(reason).Inc()
}

func (m *Metrics) timedOut(kind string) {
	if m != nil {
		m.timeouts.WithLabelValues(kind).Inc()
	}
}

// resultAccepted is the result label of an accepted command.
const resultAccepted = "accepted"

// commandRefused counts a connect, publish or play refused with a status
// code (codes come from the server itself: the label's values are bounded).
func (m *Metrics) commandRefused(command, code string) {
	if m != nil {
		m.requests.WithLabelValues(command, code).Inc()
	}
}

// commandAccepted counts an accepted connect, publish or play.
func (m *Metrics) commandAccepted(command string) {
	if m != nil {
		m.requests.WithLabelValues(command, resultAccepted).Inc()
	}
}

// ConnectionRefused counts a connection the server turned away before the
// handshake (reason "limit": max_connections reached).
func (m *Metrics) ConnectionRefused() {
	if m != nil {
		m.connRefused.WithLabelValues(refusedConnectionCap).Inc()
	}
}

// ReasonError is an error with the reason a connection or a media source
// ended, for the close log and the metrics (a media source's error, or what
// a server closes its connections with).
type ReasonError struct {
	Reason string
	Err    error
}

func (e ReasonError) Error() string { return e.Err.Error() }
func (e ReasonError) Unwrap() error { return e.Err }

// WithReason names the reason of err (see ReasonError).
func WithReason(reason string, err error) error { return ReasonError{Reason: reason, Err: err} }

// ErrWriteTimeout: the peer took nothing for WriteTimeout.
var ErrWriteTimeout = errors.New("rtmp: write timed out (peer not reading)")

// CloseReason classifies why a connection ended (its first close error).
func CloseReason(err error) string {
	var re ReasonError
	var ne net.Error
	switch {
	case errors.As(err, &re):
		return re.Reason
	case errors.Is(err, ErrWriteTimeout):
		return ReasonWriteTimeout
	case errors.Is(err, ErrControlQueueFull):
		return ReasonControlQueue
	case errors.Is(err, ErrServerClosing):
		return ReasonShutdown
	case errors.Is(err, ErrProtocol):
		return ReasonProtocol
	case isEOF(err):
		return ReasonEOF // a write that found the peer gone included
	case errors.Is(err, errWrite):
		return ReasonWriteError
	case errors.As(err, &ne) && ne.Timeout():
		return ReasonIdleTimeout
	case err == nil || errors.Is(err, ErrClosed):
		return ReasonClosed
	}
	var st Status
	if errors.As(err, &st) {
		return ReasonClosed
	}
	return ReasonOther
}

// errWrite marks write errors ("rtmp write: ...").
var errWrite = errors.New("rtmp write")

// ServerClosing is the error a server's connections are closed with when
// ctx ends: its cause when that names a reason (a drain), else
// ErrServerClosing.
func ServerClosing(ctx context.Context) error {
	var re ReasonError
	if errors.As(context.Cause(ctx), &re) {
		return re
	}
	return ErrServerClosing
}
