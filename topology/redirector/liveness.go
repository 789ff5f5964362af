package redirector

import (
	"time"

	"github.com/nats-io/nats.go"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// Liveness. A relay counts as up while its status is fresh (StatusTTL)
// and, once it has sent heartbeats, while they keep coming (AliveTimeout):
// a relay that dies without a word is out of rotation within AliveTimeout
// and a tenth (1.65 s by default) instead of the status TTL (10 s). A
// relay that says goodbye (it stops on purpose) or removes its status is
// out at once; one that starts draining is drained at once. One whose
// process dies is out as soon as its NATS server notices the closed
// connection and its listener refuses (disconnect.go). The primary is
// always up.

// liveLocked reports whether rs is up at now; r.mu is held.
func (r *Redirector) liveLocked(rs *relayState, now time.Time) bool {
	if !rs.gone.IsZero() {
		return false // its process is gone until its listener answers (disconnect.go)
	}
	if !rs.bye.IsZero() && !rs.alive.After(rs.byeSeen) {
		return false
	}
	if now.Sub(rs.at) > r.cfg.StatusTTL {
		return false
	}
	// Heartbeats missed while the bus was away do not count: after a
	// reconnection they get AliveTimeout to come back.
	return rs.alive.IsZero() || now.Sub(rs.alive) <= r.cfg.AliveTimeout || now.Sub(r.busSince) <= r.cfg.AliveTimeout
}

func (r *Redirector) onAliveMsg(m *nats.Msg) {
	a, err := bus.DecodeAlive(m.Data)
	if err != nil {
		return
	}
	if subj, err := bus.AliveSubject(a.ID); err != nil || subj != m.Subject {
		return // a heartbeat for another relay than its subject says
	}
	r.onAlive(a, time.Now())
}

// onAlive takes a heartbeat (or goodbye) of relay a.ID received at now.
func (r *Redirector) onAlive(a bus.Alive, now time.Time) {
	id, ok := r.mesh.ServerByID(a.ID)
	if !ok || id == r.mesh.Primary() {
		return
	}
	r.mu.Lock()
	rs := r.relays[id]
	if rs == nil {
		rs = &relayState{}
		r.relays[id] = rs
	}
	if !rs.bye.IsZero() && !a.Time.After(rs.bye) {
		r.mu.Unlock()
		return // sent before its goodbye
	}
	if a.Bye {
		rs.bye, rs.byeSeen = a.Time, now
	} else {
		rs.alive = now
		if !rs.gone.IsZero() {
			r.reviveLocked(id, rs)
		}
	}
	wasUp := rs.up
	rs.up = r.liveLocked(rs, now)
	up := rs.up
	r.mu.Unlock()
	r.setState(id, up, a.Draining || a.Bye)
	if wasUp && !up {
		r.log.Info("relay said goodbye, not sending viewers there", "server", a.ID)
	}
}

// onStatusRemoved: a relay's status left the bucket (its goodbye, or an
// operator): it is down until it reports again.
func (r *Redirector) onStatusRemoved(key string) {
	id, ok := r.mesh.ServerByID(key)
	if !ok || id == r.mesh.Primary() {
		return
	}
	r.markDown(id, "status removed")
}

func (r *Redirector) markDown(id placement.ServerID, why string) {
	r.mu.Lock()
	rs := r.relays[id]
	was := rs != nil && rs.up
	if rs != nil {
		rs.up = false
		rs.at = time.Time{}
	}
	r.mu.Unlock()
	r.mesh.SetUp(id, false)
	if was {
		r.log.Info("relay down, not sending viewers there", "server", r.mesh.Server(id).ID, "why", why)
	}
}

// setState sets a server's state in the mesh: down, draining or up (the
// mesh has one state per server, so draining must not revive a dead one).
func (r *Redirector) setState(id placement.ServerID, up, draining bool) {
	if !up {
		r.mesh.SetUp(id, false)
		return
	}
	r.mesh.SetDraining(id, draining)
}

// onStatusMsg takes a status sent as a core message.
func (r *Redirector) onStatusMsg(m *nats.Msg) {
	s, err := bus.DecodeStatus(m.Data)
	if err != nil {
		return
	}
	if subj, err := bus.StatusSubject(s.ID); err != nil || subj != m.Subject {
		return // a status for another relay than its subject says
	}
	r.onStatus(s)
}
