package origin

import (
	"errors"
	"net/http"
	"strings"

	"github.com/relaymesh/relaymesh/internal/httpserver"
	"github.com/relaymesh/relaymesh/internal/rpc"
)

// Errors of the server-to-client API.
var (
	ErrBadMethod = errors.New("origin: bad method name")
	ErrNoClient  = errors.New("origin: no such client in this scope")
)

// CallScope calls method on every client of a scope: its own clients
// directly, and the clients of every relay through the relay's scope link.
// It returns how many own clients and relay links it sent the call to.
func (s *Server) CallScope(scope, method string, args []any) (clients, relays int, err error) {
	if !rpc.ValidMethod(method) {
		return 0, 0, ErrBadMethod
	}
	direct, err := rpc.CallMessage(method, args)
	if err != nil {
		return 0, 0, err
	}
	mesh, err := rpc.MeshCallMessage(rpc.Target{Method: method, Args: args})
	if err != nil {
		return 0, 0, err
	}
	for _, p := range s.peers.Scope(scope) {
		switch {
		case p.Link:
			if p.Send(mesh) == nil {
				relays++
			}
		case !p.Relay:
			if p.Send(direct) == nil {
				clients++
			}
		}
	}
	return clients, relays, nil
}

// CallClient calls method on one client, by its mesh-wide id. A client of
// the primary is called directly (delivered true); a relay's client through
// the scope's relay links (forwarded counts them; the relay that owns the
// client delivers it).
func (s *Server) CallClient(scope, id, method string, args []any) (delivered bool, forwarded int, err error) {
	if !rpc.ValidMethod(method) {
		return false, 0, ErrBadMethod
	}
	if strings.HasPrefix(id, s.peers.Node()+":") {
		p := s.peers.ByName(id)
		if p == nil || p.Scope != scope || p.Relay {
			return false, 0, ErrNoClient
		}
		m, err := rpc.CallMessage(method, args)
		if err != nil {
			return false, 0, err
		}
		return p.Send(m) == nil, 0, nil
	}
	mesh, err := rpc.MeshCallMessage(rpc.Target{To: id, Method: method, Args: args})
	if err != nil {
		return false, 0, err
	}
	for _, p := range s.peers.Scope(scope) {
		if p.Link && p.Send(mesh) == nil {
			forwarded++
		}
	}
	if forwarded == 0 {
		return false, 0, ErrNoClient
	}
	return false, forwarded, nil
}

// MaxCallBody bounds the JSON body of the HTTP call API.
const MaxCallBody = 1 << 20

// Routes mounts the HTTP API on mux:
//
//	POST /api/v1/apps/{app}/scopes/{scope}/call               {method, args}
//	POST /api/v1/apps/{app}/scopes/{scope}/clients/{id}/call  {method, args}
//	GET  /api/v1/apps/{app}/scopes/{scope}/sharedobjects/{name}
func (s *Server) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/v1/apps/{app}/scopes/{scope}/call", func(w http.ResponseWriter, r *http.Request) {
		scope := r.PathValue("app") + "/" + r.PathValue("scope")
		method, args, ok := readCall(w, r)
		if !ok {
			return
		}
		n, relays, err := s.CallScope(scope, method, args)
		if err != nil {
			httpError(w, http.StatusBadRequest, err)
			return
		}
		httpserver.WriteJSON(w, http.StatusOK, map[string]any{"scope": scope, "method": method, "clients": n, "relays": relays})
	})
	mux.HandleFunc("POST /api/v1/apps/{app}/scopes/{scope}/clients/{id}/call", func(w http.ResponseWriter, r *http.Request) {
		scope := r.PathValue("app") + "/" + r.PathValue("scope")
		method, args, ok := readCall(w, r)
		if !ok {
			return
		}
		delivered, forwarded, err := s.CallClient(scope, r.PathValue("id"), method, args)
		switch {
		case errors.Is(err, ErrNoClient):
			httpError(w, http.StatusNotFound, err)
		case err != nil:
			httpError(w, http.StatusBadRequest, err)
		case delivered:
			httpserver.WriteJSON(w, http.StatusOK, map[string]any{"delivered": true})
		default:
			httpserver.WriteJSON(w, http.StatusAccepted, map[string]any{"forwarded": forwarded})
		}
	})
	mux.HandleFunc("GET /api/v1/apps/{app}/scopes/{scope}/sharedobjects/{name}", func(w http.ResponseWriter, r *http.Request) {
		scope := r.PathValue("app") + "/" + r.PathValue("scope")
		snap, ok := s.auth.Snapshot(scope, r.PathValue("name"))
		if !ok {
			httpError(w, http.StatusNotFound, errors.New("shared object not in use"))
			return
		}
		slots := map[string]any{}
		for k, v := range snap.Slots {
			if j, err := rpc.ToJSON(v); err == nil {
				slots[k] = j
			}
		}
		httpserver.WriteJSON(w, http.StatusOK, map[string]any{"version": snap.Version, "slots": slots})
	})
}

func readCall(w http.ResponseWriter, r *http.Request) (string, []any, bool) {
	v, err := rpc.DecodeJSON(r.Body, MaxCallBody)
	if err != nil {
		httpError(w, http.StatusBadRequest, err)
		return "", nil, false
	}
	o, _ := v.(map[string]any)
	method, _ := o["method"].(string)
	if !rpc.ValidMethod(method) {
		httpError(w, http.StatusBadRequest, ErrBadMethod)
		return "", nil, false
	}
	var args []any
	switch a := o["args"].(type) {
	case nil:
	case []any:
		args = a
	default:
		httpError(w, http.StatusBadRequest, errors.New("args must be an array"))
		return "", nil, false
	}
	return method, args, true
}

func httpError(w http.ResponseWriter, code int, err error) {
	httpserver.WriteJSON(w, code, map[string]any{"error": err.Error()})
}
