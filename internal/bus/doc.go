// Package bus is the control plane's vocabulary on NATS: the versioned
// subjects, the JetStream key-value buckets and the message types that
// relays, the orchestrator and the redirector exchange, plus the plumbing
// to reach NATS (an embedded server for one-machine setups, a client that
// reconnects forever, and a bounded asynchronous publisher so that the
// data plane never waits for the bus).
//
// Subjects (every token after the version is checked by ValidToken):
//
//	relaymesh.v1.relay.<id>.status           Status, published by a relay every interval
//	relaymesh.v1.relay.<id>.cmd              Command (request) → Reply, orchestrator to relay
//	relaymesh.v1.demand                      Demand, batches of viewer requests from redirectors
//	relaymesh.v1.stream.<app>.<name>.event   StreamEvent, publish/unpublish on the primary
//
// Buckets:
//
//	relaymesh_relays      key <relay id>  → Status; bucket TTL, so dead relays vanish
//	relaymesh_placements  key StreamKey() → Placement; written by the leading orchestrator
//	relaymesh_leader      key "leader"    → Lease; bucket TTL, renewed by the leader
//
// Encoding: every message is one JSON object (field names below), at most
// MaxMessageSize bytes. JSON keeps the bus readable with ordinary NATS tools;
// the messages are small and infrequent (a status every few seconds per
// relay, demand in batches), so compactness matters less than clarity.
// Decoders reject oversized input, unknown versions and invalid fields.
//
// Compatibility: components of two releases run side by side while a mesh
// is upgraded one node at a time, so within a subject version (v1) a
// message may only gain fields, which older decoders ignore, and a new
// field's zero value must mean what older senders meant by leaving it out.
// Removing or renaming a field, changing its type or its meaning, or
// requiring a new one is a new version of the subjects and buckets (v2),
// which both releases must then speak during the upgrade.
package bus
