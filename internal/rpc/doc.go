// Package rpc holds what the primary's and the relays' shared-object and
// RPC layers have in common: the scope of a connection, the mesh-internal
// command that carries server-to-client calls down the relay tree, the
// registry of connections (Peers) that encodes shared-object messages once
// and queues them on never-dropped control queues, conversion between AMF0
// values and JSON, and a small RTMP client (Client) for tests and tools.
//
// Calls from clients to the server are ordinary RTMP commands with a
// transaction id other than the built-in ones; relays forward them upstream
// with the transaction id remapped and the calling client's mesh-wide id in
// the command object (PropClient). Calls from the server to clients travel
// down the tree as the command MeshCall, which each relay delivers to its own
// clients of the scope and forwards to its downstream relays, so every
// client gets a call exactly once.
package rpc
