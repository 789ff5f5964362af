package bus

// LeaderSubject is where the leading orchestrator answers requests while it
// lives: a follower that gets "no responders" (the leader's connection is
// gone from the cluster) and sees the lease not renewed may remove it
// instead of waiting for its TTL (topology/orchestrator/lease.go).
const LeaderSubject = Prefix + ".orchestrator.leader"
