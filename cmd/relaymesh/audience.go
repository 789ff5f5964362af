package main

import (
	"context"
	"errors"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/packager"
	"github.com/relaymesh/relaymesh/relay/agent"
	"github.com/relaymesh/relaymesh/relay/pull"
)

// httpAudience is what the packager serves, by app/name: its HLS/DASH
// audience and whether it has segments (nothing before the packager runs).
func (n *node) httpAudience() map[string]agent.HTTPStream {
	p := n.pkgRef.Load()
	if p == nil {
		return nil
	}
	aud := p.Audience()
	out := make(map[string]agent.HTTPStream, len(aud))
	for _, a := range aud {
		out[a.App+"/"+a.Name] = agent.HTTPStream{Ready: a.Ready, Loads: []bus.ProtocolLoad{
			{Protocol: bus.ProtoHLS, Viewers: a.HLS.Viewers, Mbps: a.HLS.Mbps},
			{Protocol: bus.ProtoDASH, Viewers: a.DASH.Viewers, Mbps: a.DASH.Mbps},
		}}
	}
	return out
}

// httpLoads is the packager's HLS/DASH audience by app/name.
func (n *node) httpLoads() map[string][]bus.ProtocolLoad {
	aud := n.httpAudience()
	out := make(map[string][]bus.ProtocolLoad, len(aud))
	for k, s := range aud {
		out[k] = s.Loads
	}
	return out
}

// stats is the load a node reports: RTMP viewers from its hubs, HLS and
// DASH viewers from its packager.
func (n *node) stats() agent.StatsFunc { return agent.Stats(n.hubs, n.httpAudience) }

// errPullEnded ends a packager subscription whose upstream pull ended.
var errPullEnded = errors.New("upstream pull ended")

// pullSubscription is a packager subscription on a relay that ends when
// the pull that feeds it ends (released by the orchestrator, drained):
// the packager then forgets the stream, and the next HTTP request pulls
// again instead of finding a playlist frozen for good.
type pullSubscription struct {
	packager.Subscription
	pulled context.Context // ends with the pull (or Close)
	stop   context.CancelFunc
}

func (s *pullSubscription) Next(ctx context.Context, dst []*av.Frame, maxBytes int) ([]*av.Frame, error) {
	if s.pulled.Err() != nil {
		return dst[:0], errPullEnded
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.pulled, cancel)()
	out, err := s.Subscription.Next(ctx, dst, maxBytes)
	if err != nil && s.pulled.Err() != nil {
		return out, errPullEnded
	}
	return out, err
}

func (s *pullSubscription) Close() {
	s.stop()
	s.Subscription.Close()
}

// followPull wraps sub so that it ends with the pull of app/name.
func followPull(sub packager.Subscription, up *pull.Upstream, app, name string) packager.Subscription {
	done := up.PullDone(app, name)
	if done == nil {
		return sub
	}
	pulled, stop := context.WithCancel(context.Background())
	go func() {
		select {
		case <-done:
		case <-pulled.Done():
		}
		stop()
	}()
	return &pullSubscription{Subscription: sub, pulled: pulled, stop: stop}
}
