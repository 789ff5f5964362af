// Package drills is the multi-host drill suite of relaymesh: a mesh of real
// relaymesh processes (a primary, relays in three regions, two
// orchestrators) and a three-node NATS cluster with JetStream, each in a
// network namespace of its own, linked by veth pairs with region latencies
// (tc netem where the kernel has it, DelayProxy otherwise), and drills that
// break it — a relay killed under load, a NATS node killed, the leading
// orchestrator killed, the primary restarted, the broadcaster flapping, a
// region cut off and healed — each measured against a threshold.
//
// Run it with `make drills` (root and iproute2 needed; it skips otherwise,
// and fails in CI, where it must run). The table of figures goes to
// docs/reliability.md.
package drills
