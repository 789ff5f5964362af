package access

import "golang.org/x/time/rate"

// Limits bound what one connection may make a server hold or do with shared
// objects. The primary's authority and every relay's replica take the same
// Limits (and add their own), so a client meets the same bounds wherever it
// connects. Zero fields take the defaults noted (see WithDefaults).
type Limits struct {
	ObjectsPerClient int // objects one viewer or publisher may use at once; default 64 (relays: unbounded)
	NameBytes        int // object names and slot keys; default 256

	MessagesPerSecond float64 // per viewer/publisher connection; default 50
	Burst             int     // default 100
	// RelayMessagesPerSecond limits relay connections, which multiplex many
	// clients; default 0 = unlimited (relays rate-limit their own clients).
	RelayMessagesPerSecond float64
	RelayBurst             int // default 1000

	SyncChunkBytes int // slot data per message when sending the full state; default 64 KiB
}

// DefaultLimits are the defaults of every zero field of Limits.
var DefaultLimits = Limits{
	ObjectsPerClient:  64,
	NameBytes:         256,
	MessagesPerSecond: 50,
	Burst:             100,
	RelayBurst:        1000,
	SyncChunkBytes:    64 << 10,
}

// WithDefaults returns l with zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.ObjectsPerClient, DefaultLimits.ObjectsPerClient)
	def(&l.NameBytes, DefaultLimits.NameBytes)
	def(&l.Burst, DefaultLimits.Burst)
	def(&l.RelayBurst, DefaultLimits.RelayBurst)
	def(&l.SyncChunkBytes, DefaultLimits.SyncChunkBytes)
	if l.MessagesPerSecond <= 0 {
		l.MessagesPerSecond = DefaultLimits.MessagesPerSecond
	}
	return l
}

// Limiter returns the message rate limiter of a new connection of the role,
// or nil when the role is not limited (relays, unless RelayMessagesPerSecond
// is set).
func (l Limits) Limiter(role Role) *rate.Limiter {
	switch {
	case role != RoleRelay:
		return rate.NewLimiter(rate.Limit(l.MessagesPerSecond), l.Burst)
	case l.RelayMessagesPerSecond > 0:
		return rate.NewLimiter(rate.Limit(l.RelayMessagesPerSecond), l.RelayBurst)
	}
	return nil
}

// NameOK reports whether an object name or slot key is within bounds.
func (l Limits) NameOK(name string) bool { return name != "" && len(name) <= l.NameBytes }

// MayUseMore reports whether a connection of the role that uses n objects
// may use one more.
func (l Limits) MayUseMore(role Role, n int) bool {
	return role == RoleRelay || n < l.ObjectsPerClient
}
