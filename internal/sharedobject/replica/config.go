package replica

import (
	"log/slog"
	"time"

	"github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
)

// Limits bound what local clients can make a Proxy hold or forward: the
// bounds every server applies to a connection (access.Limits, the same as the
// primary's) and the requests waiting for upstream. Zero fields take the
// defaults noted.
type Limits struct {
	access.Limits
	PendingPerObject int // requests awaiting the upstream answer; default 1024
}

// WithDefaults returns l with zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	l.Limits = l.Limits.WithDefaults()
	if l.PendingPerObject <= 0 {
		l.PendingPerObject = 1024
	}
	return l
}

// Config configures a Proxy.
type Config struct {
	Scope  string       // the application scope ("app/instance") this proxy serves
	Rules  access.Rules // the same rules as the primary's, applied to local clients
	Limits Limits
	Logger *slog.Logger     // default slog.Default()
	Now    func() time.Time // clock of the rate limiters; default time.Now

	// Deliver and Upstream, when set, receive the messages for local clients
	// and for the upstream connection while the proxy's lock is held, so
	// that concurrent calls keep their order; the calls then return nil for
	// what was handed over. They must not block or call back into the Proxy.
	Deliver  func([]sharedobject.Outgoing)
	Upstream func([]sharedobject.Message)
}
