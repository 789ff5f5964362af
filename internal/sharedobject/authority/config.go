package authority

import (
	"log/slog"
	"time"

	"github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
)

// Limits bound what clients can make the authority hold or do: the bounds
// every server applies to a connection (access.Limits, the same on relays),
// and those of the objects the authority holds. Zero fields take the
// defaults noted (see WithDefaults).
type Limits struct {
	access.Limits
	ObjectsPerScope int // objects alive in one application scope; default 1024
	SlotsPerObject  int // default 1024
	ValueBytes      int // encoded AMF0 size of one slot value; default 16 KiB
	ObjectBytes     int // encoded size of all slots of one object; default 1 MiB
}

// WithDefaults returns l with zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	l.Limits = l.Limits.WithDefaults()
	def(&l.ObjectsPerScope, 1024)
	def(&l.SlotsPerObject, 1024)
	def(&l.ValueBytes, 16<<10)
	def(&l.ObjectBytes, 1<<20)
	return l
}

// Config configures an Authority.
type Config struct {
	Limits Limits
	Rules  access.Rules // write and send rules; none = everything allowed
	Hook   Hook         // application veto on writes and sends; nil = none
	Store  Store        // persistence of persistent objects; nil = kept only while used
	Logger *slog.Logger // default slog.Default()
	// Now is the clock of the rate limiters; default time.Now.
	Now func() time.Time
	// Deliver, when set, receives the messages of every call while the
	// authority's lock is held, so that each connection gets them in the
	// order they were produced even when calls run concurrently; the calls
	// then return nil. It must not block or call back into the Authority
	// (enqueue into the connection's bounded queue; close the connection
	// when it is full). Without Deliver, callers must preserve that order
	// themselves, e.g. by calling from a single goroutine.
	Deliver func([]sharedobject.Outgoing)
}

func (c Config) withDefaults() Config {
	c.Limits = c.Limits.WithDefaults()
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
