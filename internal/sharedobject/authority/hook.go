package authority

import (
	"github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
)

// Hook lets an application veto what clients do to shared objects, beyond
// the configured rules. It is called with the authority's lock held: it
// must be quick and must not call back into the Authority.
type Hook interface {
	// AllowWrite is asked before every slot change, slot removal and send
	// message from a client; a non-nil error refuses it (the client gets
	// SharedObject.NoWriteAccess).
	AllowWrite(r Request) error
}

// HookFunc adapts a function to Hook.
type HookFunc func(Request) error

// AllowWrite calls f.
func (f HookFunc) AllowWrite(r Request) error { return f(r) }

// Request describes one client operation for a Hook.
type Request struct {
	Client  sharedobject.ClientID
	Role    access.Role // a relay's requests carry RoleRelay: the original client is behind it
	Scope   string
	Object  string
	Op      access.Op
	Key     string // slot (write) or handler (send)
	Value   any    // the new value (write); nil for a removal
	Remove  bool   // the slot is being deleted
	Args    []any  // send: the handler's arguments
	Version uint32 // the object's version before the change
}
