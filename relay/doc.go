// Package relay serves live streams over RTMP from stream hubs: viewers and
// downstream relays play from it, and on a relay (as opposed to the primary)
// each stream is pulled on demand from an upstream server as an ordinary
// RTMP client. The primary plugs its publish path (package ingest) in
// through Options.Publish; the relay never decides placement itself.
package relay
