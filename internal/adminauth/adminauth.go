// Package adminauth keeps the HTTP API that changes state (RPC calls,
// shared-object writes, drains: every request that is not GET, HEAD or
// OPTIONS, wherever it is mounted) apart from the public surface
// (HLS/DASH, /healthz, and read-only status where configured): behind a
// bearer token, on a listener of its own, or both.
package adminauth

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
)

// Policy says who may use the admin API.
type Policy struct {
	// Token, when set, is the bearer token of the admin API
	// (Authorization: Bearer TOKEN) on every listener.
	Token string
	// Separate is set when the admin API has a listener of its own: the
	// public listener then serves none of it.
	Separate bool
	// PrivateStatus moves the read-only status (GET /api/…, /metrics,
	// /debug/pprof/) to the admin side as well; /healthz stays public.
	PrivateStatus bool
}

// IsAdmin reports whether r may change state: any method but GET, HEAD
// and OPTIONS, so a handler added later is guarded without a list to keep.
func IsAdmin(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// IsStatus reports whether r reads status: GET /api/…, /metrics, /debug/.
func IsStatus(r *http.Request) bool {
	p := r.URL.Path
	return strings.HasPrefix(p, "/api/") || p == "/metrics" || strings.HasPrefix(p, "/debug/")
}

// authorized checks the bearer token, or the password of basic auth (any
// user name), in constant time.
func (p Policy) authorized(r *http.Request) bool {
	got := ""
	if _, pw, ok := r.BasicAuth(); ok {
		got = pw
	} else if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		got = strings.TrimSpace(a[7:])
	} else {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(p.Token)) == 1
}

func loopback(r *http.Request) bool {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Public guards the public listener. With a separate admin listener the
// admin requests (and private status) are not served here (404); else they
// need the token; with neither configured they are accepted from loopback
// addresses only, so a server listening on a public address is not open by
// default.
func (p Policy) Public(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		admin := IsAdmin(r)
		if !admin && !(p.PrivateStatus && IsStatus(r)) {
			next.ServeHTTP(w, r)
			return
		}
		switch {
		case p.Separate:
			http.Error(w, "not found: served on the admin listener\n", http.StatusNotFound)
			return
		case p.Token != "":
			if !p.authorized(r) {
				unauthorized(w)
				return
			}
		case !loopback(r):
			unauthorized(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Admin guards the admin listener: admin requests need the token when one
// is set; everything else is served.
func (p Policy) Admin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsAdmin(r) && p.Token != "" && !p.authorized(r) {
			unauthorized(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="relaymesh admin"`)
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "unauthorized: this API needs the admin token (Authorization: Bearer …)", http.StatusUnauthorized)
}
