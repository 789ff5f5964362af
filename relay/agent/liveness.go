package agent

import (
	"context"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
)

// heartbeat sends an Alive every AliveInterval until ctx ends: the
// redirectors stop naming a relay whose heartbeats stop within
// bus.DefaultAliveTimeout, long before its status expires.
func (a *Agent) heartbeat(ctx context.Context) {
	t := time.NewTicker(a.cfg.AliveInterval)
	defer t.Stop()
	for {
		a.sendAlive(bus.Alive{Draining: a.draining.Load()})
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sendAlive publishes a heartbeat; core NATS publish only queues in the
// client, it never waits for the server.
func (a *Agent) sendAlive(al bus.Alive) {
	al.ID, al.Time = a.cfg.ID, time.Now().UTC()
	if data, err := bus.Encode(al); err == nil {
		_ = a.conn.NC.Publish(a.alvSubj, data)
	}
}

// goodbye tells the control plane the relay stops on purpose: a Bye
// heartbeat, and its status removed from the bucket, so that redirectors
// stop naming it at once rather than when its heartbeats or status time
// out. It waits at most a second for the bus.
func (a *Agent) goodbye(b *bus.Buckets) {
	a.sendAlive(bus.Alive{Draining: true, Bye: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if b != nil {
		if err := b.Relays.Delete(ctx, a.cfg.ID); err != nil {
			a.log.Debug("status not removed", "err", err)
		}
	}
	if err := a.conn.NC.FlushWithContext(ctx); err != nil {
		a.log.Debug("goodbye not flushed", "err", err)
	}
	a.log.Info("said goodbye to the control plane")
}
