package orchestrator

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/controller"
	"github.com/relaymesh/relaymesh/topology/liveness"
)

// A relay process that dies (SIGKILL, a crash, the OOM killer) sends no
// more statuses, and the controller would see it down only after
// StatusTTL. Its NATS server announces its closed connection at once,
// though (bus.DisconnectWildcard), and the leader then asks the relay's
// listener, as the redirector does (topology/liveness): refused, the
// relay is down now (controller.EvGone), so that the streams it carried
// and the capacity it gave are replaced without waiting; answered or no
// answer, the statuses decide as before. The probes run beside the
// leader's loop, at most liveness.MaxProbes at once; their results come
// back to it as events, in order with everything else.

// liveAddrs keeps where to ask each server (liveness.Addr of the
// addresses in its last status) and when it last reported.
type liveAddrs struct {
	addr map[int]string
	seen map[int]time.Time
}

func (l *liveAddrs) status(srv int, s bus.Status, now time.Time) {
	if l.addr == nil {
		l.addr, l.seen = map[int]string{}, map[int]time.Time{}
	}
	if a := liveness.Addr(s.HTTP, s.RTMP); a != "" {
		l.addr[srv] = a
	}
	l.seen[srv] = now
}

// goneResult: a probe found the listener of server srv refusing; its bus
// connection closed at since.
type goneResult struct {
	srv    int
	probes int
	since  time.Time
	reason string // the NATS server's reason for the disconnect
	addr   string
}

// prober runs the probes of disconnected relays for the leader.
type prober struct {
	dial func(context.Context, string) liveness.Result
	sem  chan struct{}
	out  chan goneResult
	wg   sync.WaitGroup
}

func newProber() *prober {
	return &prober{dial: liveness.Dial, sem: make(chan struct{}, liveness.MaxProbes), out: make(chan goneResult, liveness.MaxProbes)}
}

// subscribe delivers the disconnect advisories to ch (dropped when it is
// full: the statuses decide then).
func subscribeDisconnects(nc *nats.Conn, ch chan<- bus.Disconnect) (*nats.Subscription, error) {
	return nc.Subscribe(bus.DisconnectWildcard, func(m *nats.Msg) {
		d, err := bus.DecodeDisconnect(m.Data)
		if err != nil {
			return
		}
		select {
		case ch <- d:
		default:
		}
	})
}

// onDisconnect: the bus connection of the server named d.Name closed.
func (st *state) onDisconnect(ctx context.Context, now time.Time, d bus.Disconnect) {
	srv, ok := st.servers[d.Name]
	if !ok || srv == st.g.Primary() || st.ctl.IsDown(srv) {
		return // not a relay's agent (an orchestrator, a tool), or down already
	}
	addr := st.live.addr[srv]
	if addr == "" {
		return // nowhere to ask: the statuses decide
	}
	p := st.probes
	select {
	case p.sem <- struct{}{}:
	default:
		return // many at once: the statuses decide
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer func() { <-p.sem }()
		out, n := liveness.Confirm(ctx, addr, p.dial, nil)
		if out != liveness.Gone {
			return
		}
		select {
		case p.out <- goneResult{srv: srv, probes: n, since: now, reason: d.Reason, addr: addr}:
		case <-ctx.Done():
		}
	}()
}

// onGone: a probe found server r.srv's listener refusing.
func (st *state) onGone(ctx context.Context, r goneResult) {
	if st.live.seen[r.srv].After(r.since) {
		return // it reported since: a new process, or its connection is back
	}
	st.o.log.Warn("relay process gone, marked down", "server", st.g.Servers()[r.srv].ID, "nats_reason", r.reason,
		"refused", r.addr, "probes", r.probes, "took", time.Since(r.since).Round(time.Microsecond))
	st.apply(ctx, controller.Event{Time: time.Now(), Kind: controller.EvGone, Server: r.srv,
		Why: "its process is gone: its bus connection closed (" + r.reason + ") and its listener refuses"})
}
