package bus

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Disconnect advisories. When a client's connection closes, its NATS
// server publishes an advisory in the system account on
// $SYS.ACCOUNT.<account>.DISCONNECT, at once: a relay process that dies
// (SIGKILL, a crash, the OOM killer) has its sockets closed by the kernel,
// and the server sees it within a round trip. The embedded server imports
// the advisory of its clients' account into that account
// (ImportDisconnects), so any client of the mesh can subscribe to
// DisconnectWildcard; on an operator's cluster the same import is a line of
// its account configuration (docs/operations.md, *Liveness*), and without it
// the subscription just receives nothing.
//
// A disconnect is not a death: a healthy relay whose connection broke
// (a network blip, its NATS server restarting) reconnects within seconds and
// goes on serving all along. What a disconnect means is for its reader to
// find out (the redirector asks the relay's own listener).

// DisconnectWildcard matches the disconnect advisories of every account.
const DisconnectWildcard = "$SYS.ACCOUNT.*.DISCONNECT"

// maxDisconnectSize bounds an advisory (a few hundred bytes, more with a
// client's JWT).
const maxDisconnectSize = 16 << 10

// Disconnect is what a reader needs of a disconnect advisory.
type Disconnect struct {
	// Server is the id of the NATS server the connection was on, and
	// Client the connection's id there.
	Server string
	Client uint64
	// Name is the connection's name (a relay's agent names it by the
	// relay's id).
	Name string
	// Reason is the server's ("Client Closed", "Read Error", "Stale
	// Connection", "Server Shutdown", …).
	Reason string
	// Time is the server's time of the disconnect.
	Time time.Time
}

// disconnectWire is the part of the server's advisory read here.
type disconnectWire struct {
	Type   string    `json:"type"`
	Time   time.Time `json:"timestamp"`
	Server struct {
		ID string `json:"id"`
	} `json:"server"`
	Client struct {
		ID   uint64 `json:"id"`
		Name string `json:"name"`
	} `json:"client"`
	Reason string `json:"reason"`
}

// DecodeDisconnect decodes and validates a disconnect advisory.
func DecodeDisconnect(data []byte) (Disconnect, error) {
	if len(data) > maxDisconnectSize {
		return Disconnect{}, invalid("disconnect advisory of %d bytes", len(data))
	}
	var w disconnectWire
	if err := decode(data, &w); err != nil {
		return Disconnect{}, err
	}
	if w.Type != server.DisconnectEventMsgType {
		return Disconnect{}, invalid("advisory type %q", w.Type)
	}
	if w.Server.ID == "" || w.Client.ID == 0 {
		return Disconnect{}, invalid("disconnect advisory without server or client id")
	}
	if len(w.Client.Name) > 256 || len(w.Reason) > 256 {
		return Disconnect{}, invalid("disconnect advisory with a name or reason over 256 bytes")
	}
	return Disconnect{Server: w.Server.ID, Client: w.Client.ID, Name: w.Client.Name, Reason: w.Reason, Time: w.Time}, nil
}

// ImportDisconnects makes the disconnect advisories of srv's global account
// (where clients without credentials are) visible to that account's
// clients: the system account exports them and the global account imports
// them under the same subject.
func ImportDisconnects(srv *server.Server) error {
	sys, g := srv.SystemAccount(), srv.GlobalAccount()
	if sys == nil || g == nil {
		return errors.New("bus: the server has no system or global account")
	}
	subj := fmt.Sprintf("$SYS.ACCOUNT.%s.DISCONNECT", g.Name)
	if err := sys.AddStreamExport(subj, []*server.Account{g}); err != nil {
		return fmt.Errorf("bus: export %s: %w", subj, err)
	}
	if err := g.AddStreamImport(sys, subj, ""); err != nil {
		return fmt.Errorf("bus: import %s: %w", subj, err)
	}
	return nil
}
