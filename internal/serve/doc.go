// Package serve is the RTMP serving side shared by the primary and every
// relay: the accept loop with its drain (Server), the handler that turns
// connects, publishes and plays into hub subscriptions (Handler), the
// viewer adapter with its grace period, and the streams API.
//
// A primary plugs its publish path (package ingest) in through
// Options.Publish; a relay plugs in its upstream pulls (package relay/pull)
// through Options.Upstream, so that a play first brings the stream in.
// Shared objects and RPC come in through Options.Sessions.
package serve
