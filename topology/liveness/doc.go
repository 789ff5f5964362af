// Package liveness tells a relay process that died from a relay whose bus
// connection merely broke.
//
// When a relay's NATS connection closes, its NATS server announces it at
// once (a disconnect advisory, internal/bus). A closed connection is not a
// death: a healthy relay whose connection broke (a network blip, its NATS
// server restarting) reconnects within seconds and serves all along. So the
// reader of the advisory asks the relay's own listener, a TCP connect and
// nothing more (Confirm): refused, no process listens there any more and
// the relay is gone; accepted, it lives (asked again a few times, since a
// killed process's NATS connection can close a moment before its
// listeners do); no answer, nothing is known and the heartbeats decide.
// The redirector and the orchestrator both use it; neither touches the
// data plane, and a relay never waits on it.
package liveness
