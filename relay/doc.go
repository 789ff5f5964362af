// Package relay is the home of a relay's own parts; a relay serves viewers
// with the same code as the primary (internal/serve over internal/hub) and
// adds, in the packages below:
//
//   - relay/pull: each stream pulled on demand from an upstream server (the
//     primary or another relay) as an ordinary RTMP client, into its hub;
//   - relay/gate: play authorization (keys, signed tokens, hooks);
//   - relay/agent: the bridge to the control plane (status, commands).
//
// The relay never decides placement itself: the orchestrator does.
package relay
