// Package origin is the primary's side of shared objects and calls over RTMP.
// Server puts the shared-object Authority (package authority) on
// the RTMP connections of the primary, answers clients' calls (built-in
// methods, methods registered in Go, and an HTTP webhook per application),
// and calls methods on clients: on its own clients directly and, through the
// relays' scope links, on every client of a scope anywhere in the mesh. An
// HTTP API exposes the server-to-client calls (Routes).
//
// Every shared-object message and every call answer goes on a connection's
// control queue (rtmp.Conn.Send), never through the media drop policy.
package origin
