package redirector

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/liveness"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// A relay whose process dies. The kernel closes its sockets, its NATS
// server sees its connection close and announces it at once
// (bus.DisconnectWildcard). A closed connection alone is no death: a
// healthy relay whose connection broke (a network blip, its NATS server
// restarting) reconnects within seconds and serves all along, and a
// redirector that dropped every relay on a NATS hiccup would send the
// whole audience to the primary. So the redirector asks the relay's own
// listener (the HTTP address it reported, else its RTMP one), a TCP
// connect and nothing more:
//
//   - refused: no process listens there any more; the relay is gone, out
//     of rotation now (a few milliseconds after the kill instead of the
//     heartbeat timeout);
//   - accepted: the process lives and will reconnect; it is asked again
//     after each of liveness.Again (it could still be closing its sockets: a
//     killed process's NATS connection can close before its listeners
//     do), unless it beats again meanwhile; then the heartbeat timeout
//     decides, as before;
//   - no answer (a host cut off, a firewall): the heartbeat timeout
//     decides, as before.
//
// A gone relay comes back only when its listener answers again: a
// heartbeat or status of it (a restarted process, or a late message of the
// dead one) starts a probe, and until that probe is answered it is not
// named. Nothing here touches the data plane: a relay never waits on it.

// probeAddr is where to ask relay s (liveness.Addr of its addresses).
func probeAddr(s bus.Status) string { return liveness.Addr(s.HTTP, s.RTMP) }

func (r *Redirector) onDisconnectMsg(m *nats.Msg) {
	d, err := bus.DecodeDisconnect(m.Data)
	if err != nil {
		return
	}
	id, ok := r.mesh.ServerByID(d.Name)
	if !ok || id == r.mesh.Primary() {
		return // not a relay's agent (the orchestrator, a tool, …)
	}
	r.onDisconnect(id, d)
}

// onDisconnect: relay id's NATS connection closed; find out whether its
// process is gone.
func (r *Redirector) onDisconnect(id placement.ServerID, d bus.Disconnect) {
	r.mu.Lock()
	rs := r.relays[id]
	if rs == nil || !rs.up || rs.probing {
		r.mu.Unlock()
		return // not named anyway, or already being asked
	}
	addr := probeAddr(rs.status)
	if addr == "" {
		r.mu.Unlock()
		r.disconnects.add(outcomeUnprobed)
		return
	}
	rs.probing = true
	r.mu.Unlock()
	if !r.startProbe(func(ctx context.Context) { r.confirmGone(ctx, id, addr, d) }) {
		r.mu.Lock()
		rs.probing = false
		r.mu.Unlock()
		r.disconnects.add(outcomeUnprobed)
	}
}

// startProbe runs f in a goroutine of its own unless maxProbes are in
// flight already or Run is ending.
func (r *Redirector) startProbe(f func(ctx context.Context)) bool {
	ctx := r.runContext()
	if ctx.Err() != nil {
		return false // Run is ending: no new probe for it to wait for
	}
	select {
	case r.probeSem <- struct{}{}:
	default:
		return false
	}
	r.probeWG.Add(1)
	go func() {
		defer r.probeWG.Done()
		defer func() { <-r.probeSem }()
		f(ctx)
	}()
	return true
}

// confirmGone asks relay id's listener at addr after its disconnect d.
func (r *Redirector) confirmGone(ctx context.Context, id placement.ServerID, addr string, d bus.Disconnect) {
	since := time.Now()
	defer func() {
		r.mu.Lock()
		if rs := r.relays[id]; rs != nil {
			rs.probing = false
		}
		r.mu.Unlock()
	}()
	out, probes := liveness.Confirm(ctx, addr, r.probe, func() bool {
		r.mu.RLock()
		defer r.mu.RUnlock()
		rs := r.relays[id]
		return rs == nil || rs.alive.After(since) || !rs.up
	})
	if ctx.Err() != nil {
		return
	}
	switch out {
	case liveness.Gone:
		r.disconnects.add(outcomeGone)
		r.markGone(id, d, addr, time.Since(since), probes)
	case liveness.Alive:
		r.disconnects.add(outcomeAlive)
	default:
		r.disconnects.add(outcomeUnknown)
	}
}

// markGone takes relay id out of rotation until its listener answers again.
func (r *Redirector) markGone(id placement.ServerID, d bus.Disconnect, addr string, took time.Duration, probes int) {
	r.mu.Lock()
	rs := r.relays[id]
	if rs == nil {
		r.mu.Unlock()
		return
	}
	was := rs.up
	rs.gone, rs.up = time.Now(), false
	r.mu.Unlock()
	r.mesh.SetUp(id, false)
	if was {
		r.log.Info("relay process gone, not sending viewers there", "server", d.Name, "nats_reason", d.Reason,
			"refused", addr, "probes", probes, "took", took.Round(time.Microsecond))
	}
}

// reviveLocked: a heartbeat or status came from gone relay rs (id): ask its
// listener, and name it again once it answers. r.mu is held.
func (r *Redirector) reviveLocked(id placement.ServerID, rs *relayState) {
	if rs.probing {
		return
	}
	addr := probeAddr(rs.status)
	if addr == "" {
		rs.gone = time.Time{} // nothing to ask: the heartbeats decide
		return
	}
	rs.probing = true
	ok := r.startProbe(func(ctx context.Context) {
		res := r.probe(ctx, addr)
		r.mu.Lock()
		rs.probing = false
		if res == liveness.Refused {
			r.mu.Unlock()
			return // a late message of the dead process
		}
		// Answered (a process is back), or no answer: its messages say it
		// lives, and the heartbeat timeout decides from here.
		now := time.Now()
		rs.gone = time.Time{}
		rs.up = r.liveLocked(rs, now)
		up, draining := rs.up, rs.status.Draining
		r.mu.Unlock()
		r.setState(id, up, draining)
		if up {
			r.log.Info("relay back", "server", r.mesh.Server(id).ID)
		}
	})
	if !ok {
		rs.probing = false // asked again at its next message
	}
}

// runContext is the context of Run (Background before Run, in tests).
func (r *Redirector) runContext() context.Context {
	if ctx := r.runCtx.Load(); ctx != nil {
		return *ctx
	}
	return context.Background()
}
