package redirector

import "net/http"

// CORS: players on any origin may ask /play, /steer and the mesh API (the
// relays' HLS and DASH answer CORS likewise). Nothing here reads
// credentials a page could abuse: the sticky cookie only keeps a viewer on
// a relay, and the ?token= parameter does the same without cookies.

func setCORS(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Accept, Range, If-None-Match, If-Modified-Since")
	h.Set("Access-Control-Expose-Headers", "Location, Content-Length, Retry-After")
	h.Set("Access-Control-Max-Age", "86400")
}

// withCORS adds the CORS headers to every answer of h.
func withCORS(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		setCORS(w.Header())
		h.ServeHTTP(w, req)
	})
}

// preflight answers an OPTIONS request: 204 with the CORS headers.
func preflight(w http.ResponseWriter, _ *http.Request) {
	setCORS(w.Header())
	w.Header().Set("Allow", "GET, HEAD, OPTIONS")
	w.WriteHeader(http.StatusNoContent)
}
