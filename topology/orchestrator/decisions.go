package orchestrator

import (
	"sync"
	"time"
)

// Decision is one recent action of the leader with its reason, for
// dashboards: open, ready, failed, drain, close or down.
type Decision struct {
	Time   time.Time `json:"time"`
	Action string    `json:"action"`
	App    string    `json:"app,omitempty"`
	Name   string    `json:"name,omitempty"`
	Server string    `json:"server"`
	Reason string    `json:"reason,omitempty"`
}

// maxDecisions is how many recent decisions are kept.
const maxDecisions = 64

// decisionLog is a bounded ring of recent decisions, written by the
// leader goroutine and read by HTTP handlers.
type decisionLog struct {
	mu   sync.Mutex
	ring [maxDecisions]Decision
	next int
	n    int
}

func (l *decisionLog) add(d Decision) {
	l.mu.Lock()
	l.ring[l.next] = d
	l.next = (l.next + 1) % maxDecisions
	if l.n < maxDecisions {
		l.n++
	}
	l.mu.Unlock()
}

// list returns the decisions, newest first.
func (l *decisionLog) list() []Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Decision, 0, l.n)
	for i := 1; i <= l.n; i++ {
		out = append(out, l.ring[(l.next-i+maxDecisions)%maxDecisions])
	}
	return out
}

// Decisions returns the last decisions this instance took as leader
// (at most 64), newest first.
func (o *Orchestrator) Decisions() []Decision { return o.decisions.list() }

// note records a decision about stream s (nil for none) on server srv.
func (st *state) note(action string, s *stream, srv int, reason string) {
	st.o.counters.decision(action)
	d := Decision{Time: time.Now().UTC(), Action: action, Server: st.g.Servers()[srv].ID, Reason: reason}
	if s != nil {
		d.App, d.Name = s.app, s.name
	}
	st.o.decisions.add(d)
}
