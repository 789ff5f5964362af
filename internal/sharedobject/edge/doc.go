// Package edge carries shared objects and calls through a relay. For
// each application scope its clients use, the relay keeps one link: an RTMP
// connection to its upstream (the primary or a parent relay) connected to
// the scope's application and marked as a relay's scope link, and a
// replica.Proxy that does the shared-object bookkeeping (one upstream use
// per object, ordered fan-out, answer pairing, re-sync after a reconnect).
//
// Calls from local clients go up the link with the transaction id remapped
// and the client's mesh-wide id attached; the answer comes back to the
// client with its own transaction id. Server-to-client calls (rpc.MeshCall)
// arrive on the link and are delivered to the scope's local clients and
// passed on to downstream relays' links, so every client in the tree gets
// them once.
package edge
