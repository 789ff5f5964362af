// Package pull brings streams into a relay: one RTMP client connection per
// stream to the upstream server (the primary or a parent relay), started by
// the first play (Ensure) or held on the orchestrator's order (Hold), kept
// for a linger after the last viewer, reconnected with backoff, writing
// into the stream's hub like a publisher.
package pull
