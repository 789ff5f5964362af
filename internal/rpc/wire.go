package rpc

import (
	"fmt"
	"strings"

	"github.com/relaymesh/relaymesh/internal/amf"
	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// Names of the mesh-internal parts of the protocol.
const (
	// MeshCall is the command an upstream sends to a downstream relay's scope
	// connection to call a method on clients: MeshCall, 0, {to}, method, args…
	// An empty or absent "to" means every client of the scope.
	MeshCall = "relaymesh.call"
	// PropClient, in the command object of a call forwarded by a relay, is the
	// mesh-wide id of the client that made it.
	PropClient = "relaymeshClient"
	// PropScope, in a relay's connect object, marks the connection as the
	// relay's shared-object and RPC link for the application scope (as
	// opposed to a media pull).
	PropScope = "relaymeshScope"
	// DefaultInstance is the instance of an application connected without one.
	DefaultInstance = "_definst_"
)

// Status codes of calls and connections.
const (
	CodeCallFailed = "NetConnection.Call.Failed"
	CodeClosed     = "NetConnection.Connect.Closed"
)

// Limits on what the layer accepts in a call.
const (
	MaxMethodBytes = 256
	MaxClientBytes = 512
)

// ScopeOf returns the application scope "app/instance" of a connection's
// application name ("live/room" stays, "live" becomes "live/_definst_").
func ScopeOf(app string) string {
	app = strings.Trim(app, "/")
	if !strings.Contains(app, "/") {
		return app + "/" + DefaultInstance
	}
	return app
}

// AppOf returns the application part of a scope ("live" of "live/room").
func AppOf(scope string) string {
	app, _, _ := strings.Cut(scope, "/")
	return app
}

// ResultMessage builds _result(txid, null, value).
func ResultMessage(txid float64, value any) (rtmp.Message, error) {
	return rtmp.CommandMessage(0, "_result", txid, nil, value)
}

// ErrorMessage builds _error(txid, null, {level: error, code, description}).
func ErrorMessage(txid float64, code, description string) rtmp.Message {
	return rtmp.Message{Type: rtmp.TypeCommandAMF0, Payload: amf.MustEncode("_error", txid, nil,
		map[string]any{"level": "error", "code": code, "description": description})}
}

// CallMessage builds a call of method with no answer expected (transaction 0).
func CallMessage(method string, args []any) (rtmp.Message, error) {
	return rtmp.CommandMessage(0, append([]any{method, 0.0, nil}, args...)...)
}

// Target is a decoded MeshCall: whom to call and with what.
type Target struct {
	To     string // mesh-wide client id; "" for every client of the scope
	Method string
	Args   []any
}

// MeshCallMessage encodes t as a MeshCall command.
func MeshCallMessage(t Target) (rtmp.Message, error) {
	obj := map[string]any{}
	if t.To != "" {
		obj["to"] = t.To
	}
	return rtmp.CommandMessage(0, append([]any{MeshCall, 0.0, obj, t.Method}, t.Args...)...)
}

// ParseMeshCall decodes a MeshCall command (already parsed by
// rtmp.ParseCommand). Errors describe what is wrong; nothing panics.
func ParseMeshCall(cmd *rtmp.Command) (Target, error) {
	if cmd.Name != MeshCall {
		return Target{}, fmt.Errorf("rpc: %q is not %s", cmd.Name, MeshCall)
	}
	var t Target
	if cmd.Object != nil {
		if to, ok := cmd.Object["to"].(string); ok {
			if len(to) > MaxClientBytes {
				return Target{}, fmt.Errorf("rpc: client id of %d bytes", len(to))
			}
			t.To = to
		}
	}
	if len(cmd.Args) == 0 {
		return Target{}, fmt.Errorf("rpc: %s without a method", MeshCall)
	}
	m, ok := cmd.Args[0].(string)
	if !ok || !ValidMethod(m) {
		return Target{}, fmt.Errorf("rpc: bad method in %s", MeshCall)
	}
	t.Method, t.Args = m, cmd.Args[1:]
	return t, nil
}

// ValidMethod reports whether name may be called: not empty, not too long,
// not a reply (_result, _error) and not mesh-internal.
func ValidMethod(name string) bool {
	return name != "" && len(name) <= MaxMethodBytes && !strings.HasPrefix(name, "_") &&
		!strings.HasPrefix(name, "relaymesh.")
}

// ClientOf returns the calling client's id carried by a relay in a
// forwarded call's command object.
func ClientOf(cmd *rtmp.Command) string {
	if cmd.Object == nil {
		return ""
	}
	id, _ := cmd.Object[PropClient].(string)
	if len(id) > MaxClientBytes {
		return ""
	}
	return id
}

// ErrorOf returns the code and description of an _error command.
func ErrorOf(cmd *rtmp.Command) (code, description string) {
	for _, a := range cmd.Args {
		if o, ok := amf.Object(a); ok {
			code, _ = o["code"].(string)
			description, _ = o["description"].(string)
			return code, description
		}
	}
	return CodeCallFailed, "error"
}

// ResultOf returns the value of a _result command (the first argument after
// the command object; nil when there is none).
func ResultOf(cmd *rtmp.Command) any {
	if len(cmd.Args) > 0 {
		return cmd.Args[0]
	}
	return nil
}
