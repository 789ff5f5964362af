package replica

import (
	"log/slog"
	"time"

	"github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
)

// Limits bound what local clients can make a Proxy hold or forward. Zero
// fields take the defaults noted.
type Limits struct {
	ObjectsPerClient  int     // objects one local viewer or publisher may use; default 64 (relays: unbounded)
	NameBytes         int     // object names and slot keys; default 256
	PendingPerObject  int     // requests awaiting the upstream answer; default 1024
	MessagesPerSecond float64 // per local viewer/publisher; default 50
	Burst             int     // default 100
	// RelayMessagesPerSecond limits downstream relays; 0 = unlimited.
	RelayMessagesPerSecond float64
	RelayBurst             int // default 1000
	SyncChunkBytes         int // slot data per message of a full state; default 64 KiB
}

// WithDefaults returns l with zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.ObjectsPerClient, 64)
	def(&l.NameBytes, 256)
	def(&l.PendingPerObject, 1024)
	def(&l.Burst, 100)
	def(&l.RelayBurst, 1000)
	def(&l.SyncChunkBytes, 64<<10)
	if l.MessagesPerSecond <= 0 {
		l.MessagesPerSecond = 50
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
