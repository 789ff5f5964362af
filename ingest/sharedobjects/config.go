package sharedobjects

import (
	"log/slog"
	"time"

	"github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
)

// Limits bound what clients can make the authority hold or do. Zero fields
// take the defaults noted (see WithDefaults).
type Limits struct {
	ObjectsPerClient int // objects one viewer or publisher may use at once; default 64 (relays: unbounded)
	ObjectsPerScope  int // objects alive in one application scope; default 1024
	SlotsPerObject   int // default 1024
	ValueBytes       int // encoded AMF0 size of one slot value; default 16 KiB
	ObjectBytes      int // encoded size of all slots of one object; default 1 MiB
	NameBytes        int // object names and slot keys; default 256

	MessagesPerSecond float64 // per viewer/publisher connection; default 50
	Burst             int     // default 100
	// RelayMessagesPerSecond limits relay connections, which multiplex many
	// clients; default 0 = unlimited (relays rate-limit their own clients).
	RelayMessagesPerSecond float64
	RelayBurst             int // default 1000

	SyncChunkBytes int // slot data per message when sending the full state; default 64 KiB
}

// WithDefaults returns l with zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.ObjectsPerClient, 64)
	def(&l.ObjectsPerScope, 1024)
	def(&l.SlotsPerObject, 1024)
	def(&l.ValueBytes, 16<<10)
	def(&l.ObjectBytes, 1<<20)
	def(&l.NameBytes, 256)
	def(&l.Burst, 100)
	def(&l.RelayBurst, 1000)
	def(&l.SyncChunkBytes, 64<<10)
	if l.MessagesPerSecond <= 0 {
		l.MessagesPerSecond = 50
	}
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
